import { lazy } from 'react'
import { QueryClient } from '@tanstack/react-query'
import { Admin, Resource, defaultTheme } from 'react-admin'
import CategoryIcon from '@mui/icons-material/Category'
import InventoryIcon from '@mui/icons-material/Inventory2'
import PeopleIcon from '@mui/icons-material/People'
import ReceiptIcon from '@mui/icons-material/Receipt'
import { authProvider } from './api/authProvider'
import { api } from './api/client'
import { createDataProvider } from './api/dataProvider'
import { SignIn } from './pages/SignIn'
import { ProductCreate, ProductEdit, ProductList } from './pages/products'
import { CategoryCreate, CategoryEdit, CategoryList, CategoryTree } from './pages/categories'
import AccountTreeIcon from '@mui/icons-material/AccountTree'
import { OrderList, OrderShow } from './pages/orders'
import { ReturnList, ReturnShow, WithdrawalList, WithdrawalShow } from './pages/returns'
import AssignmentReturnIcon from '@mui/icons-material/AssignmentReturn'
import GavelIcon from '@mui/icons-material/Gavel'
import { UserCreate, UserEdit, UserList } from './pages/users'
import { WebhookCreate, WebhookEdit, WebhookList } from './pages/webhooks'
import WebhookIcon from '@mui/icons-material/Webhook'
import ShippingIcon from '@mui/icons-material/LocalShipping'
import { ShippingMethodCreate, ShippingMethodEdit, ShippingMethodList } from './pages/shippingMethods'
import DiscountIcon from '@mui/icons-material/LocalOffer'
import PercentIcon from '@mui/icons-material/Percent'
import ClassIcon from '@mui/icons-material/Class'
import { TaxClassCreate, TaxClassEdit, TaxClassList, TaxRateCreate, TaxRateEdit, TaxRateList } from './pages/taxes'
import { DiscountCodeCreate, DiscountCodeEdit, DiscountCodeList } from './pages/discountCodes'
import { CsvPage } from './pages/csv'
import ImportExportIcon from '@mui/icons-material/ImportExport'
import KeyIcon from '@mui/icons-material/Key'
import { ApiKeyCreate, ApiKeyList } from './pages/apiKeys'
import BadgeIcon from '@mui/icons-material/Badge'
import type { Permission } from './api/permissions'
import { StaffCreate, StaffEdit, StaffList } from './pages/staff'
import HistoryIcon from '@mui/icons-material/History'
import { AuditLogList } from './pages/auditLog'

const dataProvider = createDataProvider(api)

// A failed read is tried once more, half a second later, and then said: React Query's default (three more tries,
// over 7 s) kept a page spinning long after the API had answered that it could not.
const queryClient = new QueryClient({ defaultOptions: { queries: { retry: 1, retryDelay: 500 } } })

// The chart is the heaviest page: it loads on its own.
const Overview = lazy(() => import('./pages/Overview'))

// react-admin's default theme, with a primary colour dark enough for WCAG AA contrast on white and on the app bar.
const theme = {
  ...defaultTheme,
  palette: { ...defaultTheme.palette, primary: { main: '#1e4f91' }, secondary: { main: '#1e4f91' }, error: { main: '#b3261e' } },
  components: {
    ...defaultTheme.components,
    // Spinners and progress bars say what they are to screen readers.
    MuiCircularProgress: { defaultProps: { 'aria-label': 'Loading' } },
    MuiLinearProgress: { defaultProps: { 'aria-label': 'Loading' } },
  },
}

export function App() {
  return (
    <Admin
      title="Shop dashboard"
      authProvider={authProvider}
      dataProvider={dataProvider}
      queryClient={queryClient}
      loginPage={SignIn}
      dashboard={Overview}
      theme={theme}
      // No requireAuth: with react-admin 5.15 and react-router 7 it keeps redirecting to #/login without ever showing
      // the sign-in page. A page shown before sign-in sends nothing instead (api/client.ts, pages/Overview.tsx).
      disableTelemetry
    >
      {(permissions: Permission[] | undefined) => {
        // Each page, and its create and edit forms, only for the staff roles with its permission (docs/staff.md).
        const can = (permission: Permission) => Array.isArray(permissions) && permissions.includes(permission)
        const catalogWrite = can('catalog:write')
        const settingsWrite = can('settings:write')
        return (
          <>
            {can('catalog:read') && (
              <>
                <Resource
                  name="products"
                  list={ProductList}
                  create={catalogWrite ? ProductCreate : undefined}
                  edit={catalogWrite ? ProductEdit : undefined}
                  icon={InventoryIcon}
                  recordRepresentation="name"
                />
                <Resource
                  name="categories"
                  list={CategoryList}
                  create={catalogWrite ? CategoryCreate : undefined}
                  edit={catalogWrite ? CategoryEdit : undefined}
                  icon={CategoryIcon}
                  recordRepresentation="name"
                />
                {/* A page of its own (no records): the categories as a tree, read from GET /categories?tree=true. */}
                <Resource name="category-tree" options={{ label: 'Category tree' }} list={CategoryTree} icon={AccountTreeIcon} />
              </>
            )}
            {can('orders:read') && (
              <>
                <Resource
                  name="orders"
                  list={OrderList}
                  show={OrderShow}
                  icon={ReceiptIcon}
                  recordRepresentation={(order: { id: number }) => `Order #${order.id}`}
                />
                <Resource
                  name="returns"
                  list={ReturnList}
                  show={ReturnShow}
                  icon={AssignmentReturnIcon}
                  recordRepresentation={(ret: { id: number }) => `Return #${ret.id}`}
                />
                <Resource
                  name="withdrawals"
                  list={WithdrawalList}
                  show={WithdrawalShow}
                  icon={GavelIcon}
                  recordRepresentation={(withdrawal: { id: number }) => `Withdrawal #${withdrawal.id}`}
                />
              </>
            )}
            {settingsWrite && (
              <Resource
                name="shipping-methods"
                options={{ label: 'Shipping methods' }}
                list={ShippingMethodList}
                create={ShippingMethodCreate}
                edit={ShippingMethodEdit}
                icon={ShippingIcon}
                recordRepresentation="name"
              />
            )}
            {can('discounts:write') && (
              <Resource
                name="discount-codes"
                options={{ label: 'Discount codes' }}
                list={DiscountCodeList}
                create={DiscountCodeCreate}
                edit={DiscountCodeEdit}
                icon={DiscountIcon}
                recordRepresentation="code"
              />
            )}
            {/* Any admin reads the taxes (a product's tax class is chosen from them); changing them is settings:write. */}
            <Resource
              name="tax-rates"
              options={{ label: 'Tax rates' }}
              list={TaxRateList}
              create={settingsWrite ? TaxRateCreate : undefined}
              edit={settingsWrite ? TaxRateEdit : undefined}
              icon={PercentIcon}
              recordRepresentation={(rate: { country: string; taxClass: string }) => `${rate.country} ${rate.taxClass}`}
            />
            <Resource
              name="tax-classes"
              options={{ label: 'Tax classes' }}
              list={TaxClassList}
              create={settingsWrite ? TaxClassCreate : undefined}
              edit={settingsWrite ? TaxClassEdit : undefined}
              icon={ClassIcon}
              recordRepresentation="name"
            />
            {/* A page of its own (no records): the CSV exports and the product import, each shown to whom may use it. */}
            {(can('catalog:read') || can('orders:read') || can('customers:read')) && (
              <Resource name="csv" options={{ label: 'CSV' }} list={CsvPage} icon={ImportExportIcon} />
            )}
            {settingsWrite && (
              <Resource name="webhooks" list={WebhookList} create={WebhookCreate} edit={WebhookEdit} icon={WebhookIcon} recordRepresentation="url" />
            )}
            {can('customers:read') && (
              <Resource
                name="users"
                list={UserList}
                create={can('customers:write') ? UserCreate : undefined}
                edit={can('customers:write') ? UserEdit : undefined}
                icon={PeopleIcon}
                recordRepresentation="email"
              />
            )}
            {can('audit:read') && (
              // Read only: who changed what (GET /audit-log).
              <Resource name="audit-log" options={{ label: 'Audit log' }} list={AuditLogList} icon={HistoryIcon} />
            )}
            {can('staff:manage') && (
              <>
                <Resource name="staff" list={StaffList} create={StaffCreate} edit={StaffEdit} icon={BadgeIcon} recordRepresentation="email" />
                {/* Made, rotated and revoked, never edited: a key's secret is shown once, in a dialog. */}
                <Resource name="api-keys" options={{ label: 'API keys' }} list={ApiKeyList} create={ApiKeyCreate} icon={KeyIcon} recordRepresentation="name" />
              </>
            )}
          </>
        )
      }}
    </Admin>
  )
}
