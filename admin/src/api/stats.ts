import type { DataProvider } from 'react-admin'
import { unwrap } from './answers'
import { type Api, dataProviderOf } from './resource'
import type { components } from './schema'

/** GET /admin/api/stats: what the overview shows. */
export type Stats = components['schemas']['DashboardStats']

/** The overview's one call, as a method of react-admin's data provider: a 401 there ends the session like any other. */
export interface StatsProvider {
  getStats(resource: 'stats', params: { days: number }): Promise<Stats>
}

/** The overview's figures (`dataProvider.getStats('stats', {days})`); the resource has no list or records. */
export function statsProvider(api: Api): DataProvider & StatsProvider {
  const none = dataProviderOf('stats', {
    list: () => Promise.reject(new Error('The overview’s figures are not a list')),
    one: () => Promise.reject(new Error('The overview’s figures are not records')),
  })
  return {
    ...none,
    getStats: async (_resource, { days }) => unwrap(await api.GET('/admin/api/stats', { params: { query: { days } } })),
  }
}
