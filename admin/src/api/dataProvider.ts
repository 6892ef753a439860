import { combineDataProviders, type DataProvider } from 'react-admin'
import { apiKeysProvider } from './apiKeys'
import { auditLogProvider } from './auditLog'
import { categoriesProvider } from './categories'
import { discountCodesProvider } from './discountCodes'
import { ordersProvider } from './orders'
import { productsProvider } from './products'
import { returnsProvider, withdrawalsProvider } from './returns'
import type { Api } from './resource'
import { shippingMethodsProvider } from './shippingMethods'
import { staffProvider } from './staff'
import { taxClassesProvider, taxRatesProvider } from './taxes'
import { statsProvider, type StatsProvider } from './stats'
import { usersProvider } from './users'
import { webhooksProvider } from './webhooks'

/** The dashboard's data provider: react-admin's calls, and the overview's getStats. */
export type ShopDataProvider = DataProvider & StatsProvider

/**
 * react-admin's data provider over the API's typed client: one provider per resource, each in its own file
 * (products.ts, orders.ts, ...), combined by the resource a call names.
 */
export function createDataProvider(api: Api): ShopDataProvider {
  const providers: Record<string, DataProvider> = {
    products: productsProvider(api),
    categories: categoriesProvider(api),
    orders: ordersProvider(api),
    returns: returnsProvider(api),
    withdrawals: withdrawalsProvider(api),
    users: usersProvider(api),
    staff: staffProvider(api),
    webhooks: webhooksProvider(api),
    'api-keys': apiKeysProvider(api),
    'shipping-methods': shippingMethodsProvider(api),
    'discount-codes': discountCodesProvider(api),
    'tax-rates': taxRatesProvider(api),
    'tax-classes': taxClassesProvider(api),
    stats: statsProvider(api),
    'audit-log': auditLogProvider(api),
  }
  const combined = combineDataProviders((resource) => {
    const provider = providers[resource]
    if (!provider) throw new Error(`The dashboard has no resource ${resource}`)
    return provider
  })
  // combineDataProviders answers every method name, getStats included, with the method of the provider of the
  // resource the call names (its first argument): `getStats('stats', ...)` is stats.ts's.
  return combined as ShopDataProvider
}
