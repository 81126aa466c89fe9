// picomatch ships no types: the part glob uses (fast-glob compiles its patterns with the same call).
declare module 'picomatch' {
  namespace picomatch {
    interface PicomatchOptions {
      dot?: boolean
      matchBase?: boolean
      nobrace?: boolean
      nocase?: boolean
      noext?: boolean
      noglobstar?: boolean
      posix?: boolean
      strictSlashes?: boolean
    }
  }
  const picomatch: { makeRe(glob: string, options?: picomatch.PicomatchOptions): RegExp }
  export = picomatch
}
