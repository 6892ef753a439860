import type { Kysely } from 'kysely'
import type { AddressRow, Database } from '../../db/database.js'
import { AppError, messages } from '../../shared/errors.js'
import { nowIso } from '../../shared/time.js'
import * as repo from './addresses.repository.js'
import type { Address, AddressSnapshot, CreateAddressInput, UpdateAddressInput } from './addresses.schemas.js'

type Db = Kysely<Database>

/** The address's own fields, as an order keeps them. */
export function addressRowToSnapshot(row: AddressRow): AddressSnapshot {
  return {
    fullName: row.full_name,
    line1: row.line1,
    line2: row.line2,
    city: row.city,
    region: row.region,
    postalCode: row.postal_code,
    country: row.country,
    phone: row.phone,
  }
}

export function addressRowToAddress(row: AddressRow): Address {
  return { id: row.id, userId: row.user_id, ...addressRowToSnapshot(row), createdAt: row.created_at, updatedAt: row.updated_at }
}

/** Optional fields left out are null (the API shows them as null). */
export function addressInputToSnapshot(input: CreateAddressInput): AddressSnapshot {
  return {
    fullName: input.fullName,
    line1: input.line1,
    line2: input.line2 ?? null,
    city: input.city,
    region: input.region ?? null,
    postalCode: input.postalCode,
    country: input.country,
    phone: input.phone ?? null,
  }
}

/** The user's own address as an order keeps it, or undefined (unknown, or someone else's). */
export async function findOwnAddressSnapshot(db: Db, userId: number, id: number): Promise<AddressSnapshot | undefined> {
  const row = await repo.findOwnAddress(db, userId, id)
  return row ? addressRowToSnapshot(row) : undefined
}

export async function listAddresses(db: Db, userId: number): Promise<Address[]> {
  return (await repo.listAddresses(db, userId)).map(addressRowToAddress)
}

export async function createAddress(db: Db, userId: number, input: CreateAddressInput): Promise<Address> {
  const a = addressInputToSnapshot(input)
  const now = nowIso()
  const row = await repo.insertAddress(db, {
    user_id: userId,
    full_name: a.fullName,
    line1: a.line1,
    line2: a.line2,
    city: a.city,
    region: a.region,
    postal_code: a.postalCode,
    country: a.country,
    phone: a.phone,
    created_at: now,
    updated_at: now,
  })
  return addressRowToAddress(row)
}

export async function updateAddress(db: Db, userId: number, id: number, input: UpdateAddressInput): Promise<Address> {
  const changes: repo.AddressChanges = { updated_at: nowIso() }
  if (input.fullName !== undefined) changes.full_name = input.fullName
  if (input.line1 !== undefined) changes.line1 = input.line1
  if (input.line2 !== undefined) changes.line2 = input.line2
  if (input.city !== undefined) changes.city = input.city
  if (input.region !== undefined) changes.region = input.region
  if (input.postalCode !== undefined) changes.postal_code = input.postalCode
  if (input.country !== undefined) changes.country = input.country
  if (input.phone !== undefined) changes.phone = input.phone
  const row = await repo.updateOwnAddress(db, userId, id, changes)
  if (!row) throw new AppError(404, 'addressNotFound')
  return addressRowToAddress(row)
}

/** Orders that used the address keep their snapshot. */
export async function deleteAddress(db: Db, userId: number, id: number): Promise<{ message: string }> {
  if (!(await repo.deleteOwnAddress(db, userId, id))) throw new AppError(404, 'addressNotFound')
  return { message: messages.addressDeleted }
}
