import { useQuery } from '@tanstack/react-query'
import { Link, Loading, Title, useAuthenticated, useDataProvider, usePermissions } from 'react-admin'
import { Alert, Box, Card, CardContent, List, ListItem, ListItemButton, ListItemText, Stack, Typography } from '@mui/material'
import type { ShopDataProvider } from '../api/dataProvider'
import type { Permission } from '../api/permissions'
import type { Stats } from '../api/stats'

const money = (value: number, currency: string) => {
  try {
    return value.toLocaleString(undefined, { style: 'currency', currency })
  } catch {
    return `${value.toFixed(2)} ${currency}`
  }
}

/** Orders (bars) and revenue (line) per day, drawn as SVG: no chart library in the bundle. */
export function Chart({ stats }: { stats: Stats }) {
  const width = 720
  const height = 240
  const pad = { top: 16, right: 48, bottom: 28, left: 36 }
  const inner = { w: width - pad.left - pad.right, h: height - pad.top - pad.bottom }
  const series = stats.series
  const maxOrders = Math.max(1, ...series.map((day) => day.orders))
  const maxRevenue = Math.max(1, ...series.map((day) => day.revenue))
  const step = inner.w / Math.max(1, series.length)
  const x = (i: number) => pad.left + i * step
  const yOrders = (n: number) => pad.top + inner.h - (n / maxOrders) * inner.h
  const yRevenue = (n: number) => pad.top + inner.h - (n / maxRevenue) * inner.h
  const line = series.map((day, i) => `${i === 0 ? 'M' : 'L'}${(x(i) + step / 2).toFixed(1)},${yRevenue(day.revenue).toFixed(1)}`).join(' ')
  const summary = `${stats.totals.orders} orders and ${money(stats.totals.revenue, stats.currency)} revenue over the last ${stats.days} days`
  return (
    <figure style={{ margin: 0 }}>
      <svg viewBox={`0 0 ${width} ${height}`} role="img" aria-label={summary} style={{ width: '100%', height: 'auto' }} data-testid="orders-chart">
        <line x1={pad.left} x2={width - pad.right} y1={pad.top + inner.h} y2={pad.top + inner.h} stroke="#555" />
        <text x={pad.left - 6} y={pad.top + 4} fontSize="11" textAnchor="end" fill="#333">
          {maxOrders}
        </text>
        <text x={pad.left - 6} y={pad.top + inner.h} fontSize="11" textAnchor="end" fill="#333">
          0
        </text>
        <text x={width - pad.right + 6} y={pad.top + 4} fontSize="11" fill="#8a4b00">
          {Math.round(maxRevenue)}
        </text>
        {series.map((day, i) => (
          <rect
            key={day.date}
            x={x(i) + step * 0.15}
            width={step * 0.7}
            y={yOrders(day.orders)}
            height={pad.top + inner.h - yOrders(day.orders)}
            fill="#1e4f91"
            data-orders={day.orders}
          >
            <title>{`${day.date}: ${day.orders} orders, ${money(day.revenue, stats.currency)}`}</title>
          </rect>
        ))}
        <path d={line} fill="none" stroke="#8a4b00" strokeWidth="2" />
        {series.length > 0 && (
          <>
            <text x={pad.left} y={height - 8} fontSize="11" fill="#333">
              {series[0]!.date}
            </text>
            <text x={width - pad.right} y={height - 8} fontSize="11" textAnchor="end" fill="#333">
              {series[series.length - 1]!.date}
            </text>
          </>
        )}
      </svg>
      <figcaption>
        <Typography variant="body2">
          <span style={{ color: '#1e4f91', fontWeight: 700 }}>■</span> orders per day (left scale) ·{' '}
          <span style={{ color: '#8a4b00', fontWeight: 700 }}>—</span> revenue per day (right scale), UTC days. {summary}.
        </Typography>
      </figcaption>
    </figure>
  )
}

function Figure({ label, value, to }: { label: string; value: string | number; to?: string }) {
  const content = (
    <>
      <Typography variant="body2">{label}</Typography>
      <Typography variant="h5" component="p" sx={{ fontWeight: 700 }}>
        {value}
      </Typography>
    </>
  )
  return (
    <Card variant="outlined" sx={{ flex: 1, minWidth: 150 }}>
      <CardContent>{to ? <Link to={to}>{content}</Link> : content}</CardContent>
    </Card>
  )
}

/** The overview: one call to /admin/api/stats for the chart, the orders to ship and the products low on stock. */
export default function Overview() {
  // The figures are asked for once the sign-in is confirmed, not while react-admin is still checking it.
  const { authenticated } = useAuthenticated()
  const dataProvider = useDataProvider<ShopDataProvider>()
  // The figures are orders:read; a staff role without it is told where to go instead.
  const { permissions, isPending: permissionsPending } = usePermissions<Permission[]>()
  const figures = Array.isArray(permissions) && permissions.includes('orders:read')
  const query = useQuery({
    queryKey: ['admin-stats', 30],
    queryFn: () => dataProvider.getStats('stats', { days: 30 }),
    enabled: authenticated === true && figures,
  })
  const { data: stats, error } = query
  const isPending = permissionsPending || (figures && query.isPending)
  return (
    <Box sx={{ py: 2 }}>
      <Title title="Overview" />
      <Typography component="h1" variant="h5" sx={{ mb: 2 }}>
        Overview
      </Typography>
      {isPending && <Loading loadingPrimary="Loading the shop’s figures" loadingSecondary="" />}
      {!permissionsPending && !figures && <Typography>The shop’s figures are for staff who read orders. Your pages are in the menu.</Typography>}
      {error && (
        <Alert severity="error" role="alert">
          The overview could not be loaded: {error.message}
        </Alert>
      )}
      {stats && (
        <Stack spacing={2}>
          <Stack direction={{ xs: 'column', sm: 'row' }} spacing={2}>
            <Figure label={`Orders, last ${stats.days} days`} value={stats.totals.orders} to="/orders" />
            <Figure label={`Revenue, last ${stats.days} days`} value={money(stats.totals.revenue, stats.currency)} />
            <Figure label="Orders to ship" value={stats.ordersToShip} to={`/orders?filter=${encodeURIComponent(JSON.stringify({ status: 'paid' }))}`} />
          </Stack>
          <Card variant="outlined">
            <CardContent>
              <Typography component="h2" variant="h6" gutterBottom>
                Orders and revenue, last {stats.days} days
              </Typography>
              <Chart stats={stats} />
            </CardContent>
          </Card>
          <Card variant="outlined">
            <CardContent>
              <Typography component="h2" variant="h6">
                Low on stock (at most {stats.lowStockThreshold} left)
              </Typography>
              {stats.lowStock.length === 0 ? (
                <Typography sx={{ mt: 1 }}>Every product has more than {stats.lowStockThreshold} in stock.</Typography>
              ) : (
                <List dense aria-label="Products low on stock">
                  {stats.lowStock.map((product) => (
                    <ListItem key={product.id} disablePadding>
                      <ListItemButton component={Link} to={`/products/${product.id}`}>
                        <ListItemText primary={product.name} secondary={`${product.stock} in stock`} />
                      </ListItemButton>
                    </ListItem>
                  ))}
                </List>
              )}
            </CardContent>
          </Card>
        </Stack>
      )}
    </Box>
  )
}
