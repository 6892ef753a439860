import { useId, useState, type ChangeEvent } from 'react'
import { Title, useNotify } from 'react-admin'
import {
  Alert,
  Box,
  Button,
  Card,
  CardContent,
  Checkbox,
  FormControlLabel,
  LinearProgress,
  Table,
  TableBody,
  TableCell,
  TableContainer,
  TableHead,
  TableRow,
  Typography,
} from '@mui/material'
import { api } from '../api/client'
import { downloadExport, EXPORTS, importProducts, type ExportPath, type ImportReport } from '../api/csv'
import { useCan } from '../api/permissions'
import { useCall } from './variants'

/**
 * CSV: a button per export, and the product import. A file is always checked first (a dry run, which writes nothing);
 * its report is shown, and only then can it be applied: all or nothing, or only the products whose rows are valid.
 */
export function CsvPage() {
  // Each export by its permission; the import is catalog:write.
  const importer = useCan()('catalog:write')
  return (
    <Box sx={{ mt: 2, display: 'grid', gap: 2 }}>
      <Title title="CSV" />
      <Exports />
      {importer && <Import />}
    </Box>
  )
}

function Exports() {
  const call = useCall()
  const notify = useNotify()
  const [busy, setBusy] = useState<ExportPath | null>(null)
  const [problem, setProblem] = useState<string | null>(null)
  const can = useCan()
  const download = async (path: ExportPath) => {
    setBusy(path)
    setProblem(null)
    const result = await call(() => downloadExport(api, path))
    setBusy(null)
    if (result.ok) notify(`Downloaded ${result.value}`, { type: 'success' })
    else setProblem(result.failure.message)
  }
  return (
    <Card>
      <CardContent>
        <Typography component="h2" variant="h6" gutterBottom>
          Export
        </Typography>
        <Typography variant="body2" sx={{ mb: 2 }}>
          CSV files for a spreadsheet (UTF-8, one header row). A products file can be edited and imported back below.
        </Typography>
        <Box sx={{ display: 'flex', flexWrap: 'wrap', gap: 1 }}>
          {EXPORTS.filter((item) => can(item.permission)).map((item) => (
            <Button
              key={item.path}
              variant="outlined"
              disabled={busy !== null}
              onClick={() => void download(item.path)}
              aria-describedby={`${item.label}-what`}
            >
              {busy === item.path ? `Preparing ${item.label.toLowerCase()}…` : `${item.label} CSV`}
              <Box component="span" id={`${item.label}-what`} sx={{ display: 'none' }}>
                {item.description}
              </Box>
            </Button>
          ))}
        </Box>
        {problem && (
          <Alert severity="error" sx={{ mt: 2 }}>
            {problem}
          </Alert>
        )}
      </CardContent>
    </Card>
  )
}

function Import() {
  const call = useCall()
  const inputId = useId()
  const [file, setFile] = useState<File | null>(null)
  const [partial, setPartial] = useState(false)
  const [report, setReport] = useState<ImportReport | null>(null)
  const [problem, setProblem] = useState<string | null>(null)
  const [busy, setBusy] = useState(false)

  const run = async (dryRun: boolean) => {
    if (!file) return
    setBusy(true)
    setProblem(null)
    const result = await call(() => importProducts(api, file, { dryRun, partial }))
    setBusy(false)
    if (result.ok) setReport(result.value)
    else {
      setReport(null)
      setProblem(result.failure.message)
    }
  }
  const choose = (event: ChangeEvent<HTMLInputElement>) => {
    setFile(event.target.files?.[0] ?? null)
    setReport(null)
    setProblem(null)
  }
  const checked = report?.dryRun === true
  const canApply = checked && report.errors.length === 0 ? true : checked && partial
  return (
    <Card>
      <CardContent>
        <Typography component="h2" variant="h6" gutterBottom>
          Import products
        </Typography>
        <Typography variant="body2" sx={{ mb: 2 }}>
          A file in the products export’s columns (only <code>name</code> and <code>price</code> are required). It is checked first; nothing is written until
          you apply it.
        </Typography>
        <Box sx={{ display: 'flex', flexWrap: 'wrap', gap: 2, alignItems: 'center' }}>
          <Button component="label" htmlFor={inputId} variant="outlined">
            Choose CSV file
          </Button>
          <input
            id={inputId}
            type="file"
            accept=".csv,text/csv"
            onChange={choose}
            style={{ position: 'absolute', width: 1, height: 1, opacity: 0 }}
            aria-label="CSV file"
          />
          <Typography variant="body2">{file ? file.name : 'No file chosen'}</Typography>
          <FormControlLabel
            control={
              <Checkbox
                checked={partial}
                onChange={(event) => {
                  setPartial(event.target.checked)
                  setReport(null)
                }}
              />
            }
            label="Write the valid products even if other rows fail"
          />
        </Box>
        <Box sx={{ display: 'flex', flexWrap: 'wrap', gap: 1, mt: 2 }}>
          <Button variant="contained" disabled={!file || busy} onClick={() => void run(true)}>
            Check file (dry run)
          </Button>
          <Button variant="contained" color="primary" disabled={!canApply || busy} onClick={() => void run(false)}>
            Apply import
          </Button>
        </Box>
        {busy && <LinearProgress sx={{ mt: 2 }} />}
        {problem && (
          <Alert severity="error" sx={{ mt: 2 }}>
            {problem}
          </Alert>
        )}
        {report && <Report report={report} />}
      </CardContent>
    </Card>
  )
}

function Report({ report }: { report: ImportReport }) {
  const headline = report.dryRun
    ? report.errors.length === 0
      ? 'Dry run: the file is valid. Nothing was written yet.'
      : 'Dry run: the file has errors. Nothing was written.'
    : report.applied
      ? 'Import applied.'
      : 'Nothing was written: the file has errors.'
  return (
    <Box sx={{ mt: 2 }} role="status" aria-live="polite">
      <Alert severity={report.errors.length > 0 ? 'warning' : 'success'}>{headline}</Alert>
      <Typography component="h3" variant="subtitle1" sx={{ mt: 2 }}>
        {report.rows} rows: {report.created.products} products and {report.created.variants} variants {report.dryRun ? 'to create' : 'created'},{' '}
        {report.updated.products} products and {report.updated.variants} variants {report.dryRun ? 'to update' : 'updated'}, {report.unchanged} unchanged
      </Typography>
      {report.errors.length > 0 && (
        <TableContainer sx={{ mt: 1, maxHeight: 400 }}>
          <Table size="small" stickyHeader aria-label="Row errors">
            <TableHead>
              <TableRow>
                <TableCell>Row</TableCell>
                <TableCell>Column</TableCell>
                <TableCell>Error</TableCell>
              </TableRow>
            </TableHead>
            <TableBody>
              {report.errors.map((error, index) => (
                <TableRow key={index}>
                  <TableCell>{error.row}</TableCell>
                  <TableCell>{error.column ?? '—'}</TableCell>
                  <TableCell>{error.message}</TableCell>
                </TableRow>
              ))}
            </TableBody>
          </Table>
        </TableContainer>
      )}
    </Box>
  )
}
