import { useState, type FormEvent } from 'react'
import { useLogin } from 'react-admin'
import { Alert, Box, Button, Card, CardContent, CircularProgress, TextField, Typography } from '@mui/material'

/** Sign-in with the admin's e-mail and password. Errors (wrong password, a customer, no API) show above the form. */
export function SignIn() {
  const login = useLogin()
  const [email, setEmail] = useState('')
  const [password, setPassword] = useState('')
  const [error, setError] = useState<string | null>(null)
  const [busy, setBusy] = useState(false)

  const submit = async (event: FormEvent) => {
    event.preventDefault()
    setBusy(true)
    setError(null)
    try {
      await login({ username: email, password })
    } catch (caught) {
      setError(caught instanceof Error && caught.message ? caught.message : 'Sign-in failed.')
      setBusy(false)
    }
  }

  return (
    <Box component="main" sx={{ minHeight: '100vh', display: 'flex', alignItems: 'center', justifyContent: 'center', bgcolor: '#eef1f5', p: 2 }}>
      <Card sx={{ width: '100%', maxWidth: 400 }}>
        <CardContent>
          <Typography component="h1" variant="h5" gutterBottom>
            Shop dashboard
          </Typography>
          <Typography variant="body2" sx={{ mb: 2 }}>
            Sign in with an administrator account.
          </Typography>
          {error && (
            <Alert severity="error" role="alert" sx={{ mb: 2 }}>
              {error}
            </Alert>
          )}
          <form onSubmit={(event) => void submit(event)} noValidate aria-label="Sign in">
            <TextField
              label="Email"
              type="email"
              name="email"
              autoComplete="username"
              fullWidth
              required
              margin="normal"
              value={email}
              onChange={(e) => setEmail(e.target.value)}
            />
            <TextField
              label="Password"
              type="password"
              name="password"
              autoComplete="current-password"
              fullWidth
              required
              margin="normal"
              value={password}
              onChange={(e) => setPassword(e.target.value)}
            />
            <Button
              type="submit"
              variant="contained"
              fullWidth
              sx={{ mt: 2 }}
              disabled={busy}
              startIcon={busy ? <CircularProgress size={18} color="inherit" /> : null}
            >
              Sign in
            </Button>
          </form>
        </CardContent>
      </Card>
    </Box>
  )
}
