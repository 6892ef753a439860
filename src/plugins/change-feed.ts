import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { sql } from 'kysely'
import type pg from 'pg'
import type { DatabaseHandle } from '../db/connect.js'

/**
 * "Something changed" between instances of the service sharing one database, so that in-memory
 * caches (the catalog's responses, the users' token state, the sessions' state, the webhooks' subscriptions, the API
 * keys' state) can be emptied everywhere:
 * - On this instance, `publish` calls the topic's subscribers at once, before the writing request
 *   answers.
 * - On PostgreSQL, `publish` also sends NOTIFY on one channel, through the pool (so it goes out
 *   whether or not this instance's listener is up, and is sent again until it does), and every
 *   instance LISTENs on a connection of its own, checked every 5 s. While that connection is down,
 *   or the database is lost, `live` is false and caches must be bypassed; when it is back, every
 *   topic fires (whatever changed meanwhile was not heard).
 * - On SQLite, `PRAGMA data_version` (it moves when another connection commits) is polled, and a
 *   move fires every topic.
 */
export type Topic = 'catalog' | 'users' | 'sessions' | 'webhooks' | 'taxes' | 'apiKeys'
const TOPICS: readonly Topic[] = ['catalog', 'users', 'sessions', 'webhooks', 'taxes', 'apiKeys']

export interface ChangeFeed {
  /** Tells this instance's subscribers now and, on PostgreSQL, every other instance. */
  publish(topic: Topic): void
  subscribe(topic: Topic, onChange: () => void): void
  /** False while another instance's changes could go unnoticed (the PostgreSQL listener is down). */
  readonly live: boolean
}

declare module 'fastify' {
  interface FastifyInstance {
    changeFeed: ChangeFeed
  }
}

const CHANNEL = 'shop_changes'
const SQLITE_POLL_MS = 50

export interface ChangeFeedOptions {
  handle: DatabaseHandle
  /** Whether to hear other instances at all; without it `live` is false and caches stay off. */
  enabled: boolean
}

class Feed implements ChangeFeed {
  live = false
  private subscribers = new Map<Topic, (() => void)[]>(TOPICS.map((topic) => [topic, []]))
  /** Set when other instances are told through PostgreSQL. */
  tellOthers: (topic: Topic) => void = () => {}

  publish(topic: Topic): void {
    this.fire(topic)
    this.tellOthers(topic)
  }

  subscribe(topic: Topic, onChange: () => void): void {
    this.subscribers.get(topic)?.push(onChange)
  }

  fire(topic: Topic): void {
    for (const onChange of this.subscribers.get(topic) ?? []) onChange()
  }

  fireAll(): void {
    for (const topic of TOPICS) this.fire(topic)
  }
}

function isTopic(value: string): value is Topic {
  return (TOPICS as readonly string[]).includes(value)
}

/** How soon the listener tries again after losing its connection (and between tries). */
const RECONNECT_MS = 250
/** How often the listener checks that its connection still answers (a silent server sends no error). */
const HEARTBEAT_MS = 5000
const HEARTBEAT_TIMEOUT_MS = 2000
/** How soon a NOTIFY that could not be sent is tried again. */
const RESEND_MS = 500

/**
 * LISTEN on a connection of its own, reconnecting when it is lost; NOTIFY through the pool (so it
 * goes out whether or not this instance's listener is up), coalesced per topic and sent again until
 * it goes through.
 */
function listenOnPostgres(app: FastifyInstance, feed: Feed, handle: DatabaseHandle, connect: () => pg.Client) {
  const instanceId = `${process.pid}-${Math.random().toString(36).slice(2)}`
  let client: pg.Client | undefined
  let closing = false
  let retry: NodeJS.Timeout | undefined
  let heartbeat: NodeJS.Timeout | undefined
  // Logged once per outage, not on every failed reconnection.
  let reportedLoss = false
  const ignore = () => {}

  const discard = (old: pg.Client) => {
    old.removeAllListeners()
    old.on('error', ignore)
    old.end().catch(ignore)
  }

  const lost = (from: pg.Client, error: Error) => {
    // Errors of a connection already given up on (its 'end' after its 'error') change nothing.
    if (client !== undefined && from !== client) return
    feed.live = false
    feed.fireAll()
    discard(from)
    client = undefined
    clearInterval(heartbeat)
    if (closing) return
    if (!reportedLoss) {
      reportedLoss = true
      app.log.warn({ err: error }, 'change feed: listener lost; caches are bypassed until it is back')
    }
    retry ??= setTimeout(() => {
      retry = undefined
      void start()
    }, RECONNECT_MS)
  }

  const start = async (): Promise<void> => {
    const next = connect()
    next.on('error', (error) => lost(next, error))
    next.on('end', () => lost(next, new Error('connection ended')))
    next.on('notification', (message) => {
      if (message.channel !== CHANNEL || !message.payload) return
      const [topic, from] = message.payload.split(':')
      if (from !== instanceId && topic !== undefined && isTopic(topic)) feed.fire(topic)
    })
    try {
      await next.connect()
      await next.query(`listen ${CHANNEL}`)
    } catch (error) {
      lost(next, error as Error)
      return
    }
    if (closing) return discard(next)
    client = next
    heartbeat = setInterval(() => {
      // pg reads query_timeout from a query's config too; its types do not list it.
      next.query({ text: 'select 1', query_timeout: HEARTBEAT_TIMEOUT_MS } as pg.QueryConfig).catch((error: Error) => lost(next, error))
    }, HEARTBEAT_MS)
    heartbeat.unref()
    // Whatever changed while nobody was listening.
    feed.fireAll()
    feed.live = true
    registerWriter()
    if (reportedLoss) {
      reportedLoss = false
      app.log.info('change feed: listening again; caches resume')
    }
  }

  // The catalog's triggers (migration 2026-12-08T0000-catalog-outside-writes) send a NOTIFY for every write to the
  // catalog's tables made outside the service; the service's own connections, named here, are left out (their
  // writes publish after their commit). The name is the one the server sees (`current_setting`), written through the
  // pool whose connections it names. Again on every reconnection: a database restored from a backup taken before the
  // first start still learns it. Failing leaves this instance's writes told twice, nothing worse: a warning.
  const registerWriter = (): void => {
    sql`insert into service_connections (application_name) values (current_setting('application_name')) on conflict do nothing`
      .execute(handle.db)
      .catch((error: unknown) => {
        app.log.warn({ err: error }, "change feed: could not register this instance's connections; its catalog writes are told to every instance twice")
      })
  }

  // A silent server sends the listener no error; once the database is known to be lost, the
  // caches stop trusting the listener at once rather than at its next heartbeat.
  handle.status.onLost((error) => {
    if (client) lost(client, error instanceof Error ? error : new Error(String(error)))
  })

  // One NOTIFY per topic in flight at a time: writes arriving meanwhile share the next one, sent
  // after they committed, so a burst of orders costs a handful of notifications, not one each.
  // A NOTIFY that fails (the database is away) stays pending and is sent again until it goes out:
  // an instance whose own connection failed would otherwise keep serving what this write changed.
  const sending = new Set<Topic>()
  const pending = new Set<Topic>()
  const resend = new Map<Topic, NodeJS.Timeout>()
  let reportedSendFailure = false
  const notify = (topic: Topic): void => {
    pending.add(topic)
    if (sending.has(topic) || resend.has(topic) || closing) return
    sending.add(topic)
    pending.delete(topic)
    sql`select pg_notify(${CHANNEL}, ${`${topic}:${instanceId}`})`.execute(handle.db).then(
      () => {
        sending.delete(topic)
        if (reportedSendFailure) {
          reportedSendFailure = false
          app.log.info('change feed: notifications go out again')
        }
        if (pending.has(topic)) notify(topic)
      },
      (error: unknown) => {
        sending.delete(topic)
        pending.add(topic)
        if (!reportedSendFailure) {
          reportedSendFailure = true
          app.log.warn({ err: error }, 'change feed: could not tell other instances of a change; trying again')
        }
        const timer = setTimeout(() => {
          resend.delete(topic)
          notify(topic)
        }, RESEND_MS)
        timer.unref()
        resend.set(topic, timer)
      },
    )
  }

  const stop = async () => {
    closing = true
    clearTimeout(retry)
    clearInterval(heartbeat)
    for (const timer of resend.values()) clearTimeout(timer)
    if (pending.size > 0) {
      app.log.warn({ topics: [...pending] }, 'change feed: closing with changes other instances were not told of; their caches expire them')
    }
    const old = client
    client = undefined
    feed.live = false
    if (old) {
      old.removeAllListeners()
      old.on('error', ignore)
      await old.end().catch(ignore)
    }
  }
  return { start, notify, stop }
}

async function changeFeedPlugin(app: FastifyInstance, options: ChangeFeedOptions): Promise<void> {
  const feed = new Feed()
  const { handle } = options
  if (options.enabled && handle.dialect === 'postgres') {
    // Without a connection of its own to LISTEN on, other instances' writes would go unseen.
    if (!handle.createClient) throw new Error('the change feed on PostgreSQL needs DatabaseHandle.createClient')
    const listener = listenOnPostgres(app, feed, handle, handle.createClient)
    await listener.start()
    feed.tellOthers = listener.notify
    app.addHook('onClose', async () => listener.stop())
  } else if (options.enabled && handle.dialect === 'sqlite') {
    const dataVersion = async () => (await sql<{ data_version: number }>`pragma data_version`.execute(handle.db)).rows[0]?.data_version
    let lastVersion = await dataVersion()
    const timer = setInterval(() => {
      dataVersion()
        .then((version) => {
          if (version !== lastVersion) feed.fireAll()
          lastVersion = version
        })
        .catch((error: unknown) => app.log.warn({ err: error }, 'change feed: data_version poll failed'))
    }, SQLITE_POLL_MS)
    timer.unref()
    feed.live = true
    app.addHook('onClose', async () => {
      clearInterval(timer)
      feed.live = false
    })
  }
  app.decorate('changeFeed', feed as ChangeFeed)
}

export default fp(changeFeedPlugin, { name: 'change-feed', dependencies: ['database'] })
