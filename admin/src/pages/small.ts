import { useMediaQuery, type Theme } from '@mui/material'

/** Phones get lists of two-line items instead of wide tables. */
export function useSmallScreen(): boolean {
  return useMediaQuery<Theme>((theme) => theme.breakpoints.down('sm'))
}
