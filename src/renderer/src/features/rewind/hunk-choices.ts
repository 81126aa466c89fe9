/** What the user chose for one hunk of a change under review (see HunkReview). */
export interface HunkState {
  apply: boolean
  note: string
  /** The user's text for the hunk's new side, once they edit it. */
  text?: string
}

/** Per hunk index, the choices made so far; a hunk not in it is applied as proposed. */
export type HunkChoices = Readonly<Record<number, HunkState>>
