import type { Kysely } from 'kysely'
import type { Database } from '../../src/db/database.js'
import { inTransaction } from '../../src/db/transaction.js'
import { codeGoneOnWrite, redeem, redemptionColumns } from '../../src/modules/discounts/discounts.service.js'

/**
 * Makes an existing order a redemption of the code, as checkout does in the order's transaction: the order's row
 * takes the code, its customer (`userId`, or a guest's `email`) and its discount (`amountCents`), then `redeem`
 * counts the use (`counted` as checkout reads it: whether the code has a usage limit now). Throws what checkout would (a
 * code gone: 404 on both databases), and then changes nothing.
 */
export async function redeemOrder(
  db: Kysely<Database>,
  input: { codeId: number; orderId: number; userId: number | null; email: string; amountCents: number },
): Promise<void> {
  await inTransaction(db, async (trx) => {
    const customer = input.userId === null ? { user_id: null, guest: 1, email: input.email } : { user_id: input.userId, guest: 0, email: null }
    await trx
      .updateTable('orders')
      .set({ ...customer, ...redemptionColumns(input.codeId, input.email), discount_total_cents: input.amountCents })
      .where('id', '=', input.orderId)
      .execute()
      .catch((error: unknown) => Promise.reject(codeGoneOnWrite(error)))
    const limits = await trx.selectFrom('discount_codes').select('usage_limit').where('id', '=', input.codeId).executeTakeFirst()
    const counted = limits === undefined || limits.usage_limit !== null
    await redeem(trx, { ...input, counted })
  })
}
