/**
 * The test paths every user of sensitive-paths.ts is checked against (grep, glob, read/write/edit, the bash
 * read-only rules, the approval policy): one table, so a user that judges a path differently fails a test.
 * All of them can exist together in one folder (no name is both a file and a folder), so a test can create
 * every one of them and run the real tool over the lot.
 *
 * `protected`: true always; 'bare' only when the workspace root has no `.git` (bare-repository names).
 */
export interface SensitivePathCase {
  path: string
  secret: boolean
  protected: boolean | 'bare'
}

export const SENSITIVE_PATH_TABLE: readonly SensitivePathCase[] = [
  // Credentials: reads ask, grep leaves no trace, writes ask.
  { path: '.env', secret: true, protected: true },
  { path: '.env.local', secret: true, protected: true },
  { path: 'app/.env.production', secret: true, protected: true },
  { path: 'deploy/.ENV.Local', secret: true, protected: true },
  { path: '.env-staging', secret: true, protected: true },
  { path: '.envrc', secret: true, protected: true },
  { path: '.aws/credentials', secret: true, protected: true },
  { path: '.ssh/id_rsa', secret: true, protected: true },
  { path: '.ssh/config', secret: true, protected: true },
  { path: 'home/.ssh/known_hosts', secret: true, protected: true },
  { path: '.gnupg/private-keys-v1.d/key', secret: true, protected: true },
  { path: '.yarnrc.yml', secret: true, protected: true },
  { path: '.npmrc', secret: true, protected: true },
  { path: 'pkg/.npmrc', secret: true, protected: true },
  { path: '.netrc', secret: true, protected: true },
  { path: '.pgpass', secret: true, protected: true },
  { path: '.pypirc', secret: true, protected: true },
  { path: '.git-credentials', secret: true, protected: true },
  { path: 'id_ed25519', secret: true, protected: true },
  { path: 'certs/server.pem', secret: true, protected: true },
  { path: 'certs/server.KEY', secret: true, protected: true },
  { path: 'certs/client.p12', secret: true, protected: true },
  { path: 'android/release.jks', secret: true, protected: true },
  { path: 'infra/prod.tfvars', secret: true, protected: true },
  { path: 'infra/terraform.tfstate', secret: true, protected: true },
  { path: 'client_secret_1234.apps.json', secret: true, protected: true },
  { path: 'credentials.json', secret: true, protected: true },
  { path: '.cargo/credentials.toml', secret: true, protected: true },
  { path: '.docker/config.json', secret: true, protected: true },
  { path: '.kube/config', secret: true, protected: true },
  { path: '.config/gcloud/application_default_credentials.json', secret: true, protected: true },
  { path: 'public/.htpasswd', secret: true, protected: true },
  { path: '.s3cfg', secret: true, protected: true },
  { path: '.azure/msal_token_cache.json', secret: true, protected: true },
  { path: '_netrc', secret: true, protected: true },
  { path: '.vault-token', secret: true, protected: true },
  { path: '.mylogin.cnf', secret: true, protected: true },
  { path: 'settings/secrets.yml', secret: true, protected: true },
  { path: '.streamlit/secrets.toml', secret: true, protected: true },
  { path: '.secrets', secret: true, protected: true },
  { path: 'keys/api_key.txt', secret: true, protected: true },
  { path: 'gcp/ci-service-account.json', secret: true, protected: true },
  { path: 'app-firebase-adminsdk-x1y2.json', secret: true, protected: true },
  { path: 'keys/deploy.ppk', secret: true, protected: true },
  { path: 'AuthKey_ABC123.p8', secret: true, protected: true },
  { path: 'auth.json', secret: true, protected: true },
  { path: 'kubeconfig', secret: true, protected: true },
  { path: '.dev.vars', secret: true, protected: true },
  { path: 'wp-config.php', secret: true, protected: true },
  { path: '.config/gh/hosts.yml', secret: true, protected: true },
  { path: '.gem/credentials', secret: true, protected: true },
  { path: '.cargo/credentials', secret: true, protected: true },
  // Protected, not secret: changes run code or grant rights later; reading them is what an agent needs.
  { path: '.env.example', secret: false, protected: true },
  { path: '.git/config', secret: false, protected: true },
  { path: '.git/hooks/pre-commit', secret: false, protected: true },
  { path: '.github/workflows/ci.yml', secret: false, protected: true },
  { path: '.vscode/settings.json', secret: false, protected: true },
  { path: '.claude/settings.json', secret: false, protected: true },
  { path: '.husky/pre-commit', secret: false, protected: true },
  { path: '.bashrc', secret: false, protected: true },
  { path: '.yarnrc', secret: false, protected: true },
  { path: '.gitattributes', secret: false, protected: true },
  { path: 'lib/.gitmodules', secret: false, protected: true },
  { path: '.mcp.json', secret: false, protected: true },
  // A bare git repository's root names: protected only in a workspace without `.git`.
  { path: 'HEAD', secret: false, protected: 'bare' },
  { path: 'config', secret: false, protected: 'bare' },
  { path: 'packed-refs', secret: false, protected: 'bare' },
  { path: 'refs/heads/main', secret: false, protected: 'bare' },
  { path: 'objects/ab/cdef01', secret: false, protected: 'bare' },
  // Ordinary files, some with names close to the sensitive ones.
  { path: 'README.md', secret: false, protected: false },
  { path: 'src/env.ts', secret: false, protected: false },
  { path: 'src/environment.ts', secret: false, protected: false },
  { path: 'src/keys.ts', secret: false, protected: false },
  { path: 'src/HEAD', secret: false, protected: false },
  { path: 'src/config', secret: false, protected: false },
  { path: 'id_rsa.pub', secret: false, protected: false },
  { path: '.envoy/notes.md', secret: false, protected: false },
  { path: '.gitx/notes.md', secret: false, protected: false },
  { path: 'docs/ssh.md', secret: false, protected: false },
  { path: 'docs/.github.md', secret: false, protected: false },
  { path: '.docker/Dockerfile', secret: false, protected: false },
  { path: '.config/app.json', secret: false, protected: false },
  { path: 'src/credentials.ts', secret: false, protected: false },
  { path: 'src/secrets.ts', secret: false, protected: false },
  { path: 'docs/secrets.md', secret: false, protected: false },
  { path: 'design/tokens.json', secret: false, protected: false },
  { path: 'src/auth.ts', secret: false, protected: false },
  { path: 'settings/secrets.example.yml', secret: false, protected: false },
]

/** Whether a row is protected in a workspace with (`hasGit`) or without its own `.git`. */
export function expectedProtected(row: SensitivePathCase, hasGit: boolean): boolean {
  return row.protected === 'bare' ? !hasGit : row.protected
}
