/**
 * Bounds how long blocking work holds the event loop: `tick()` between items yields (setImmediate) once the
 * current slice has run `budgetMs`, so timers, IPC and the UI's messages are served in between.
 */
export class TimeSlices {
  private sliceStart = performance.now()

  constructor(private readonly budgetMs = 4) {}

  async tick(): Promise<void> {
    if (performance.now() - this.sliceStart < this.budgetMs) return
    await new Promise<void>((resolve) => setImmediate(resolve))
    this.sliceStart = performance.now()
  }
}
