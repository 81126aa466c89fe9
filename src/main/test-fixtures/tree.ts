import { lstat, readdir, readFile, readlink } from 'node:fs/promises'
import { join } from 'node:path'

/** Every entry under `dir`: a file's mode and content, a link's target, a folder's mode. */
export async function tree(dir: string, rel = ''): Promise<Record<string, string>> {
  const out: Record<string, string> = {}
  for (const name of (await readdir(join(dir, rel))).sort()) {
    const child = rel === '' ? name : `${rel}/${name}`
    const st = await lstat(join(dir, child))
    if (st.isSymbolicLink()) out[child] = `-> ${await readlink(join(dir, child))}`
    else if (st.isDirectory()) {
      out[child + '/'] = (st.mode & 0o777).toString(8)
      Object.assign(out, await tree(dir, child))
    } else out[child] = `${(st.mode & 0o777).toString(8)} ${await readFile(join(dir, child), 'utf8')}`
  }
  return out
}
