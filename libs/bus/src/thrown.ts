/** The message of whatever a handler threw: handlers may throw anything, not only Errors. */
export function messageOf(error: unknown): string {
  if (error instanceof Error) return error.message;
  try {
    return String(error);
  } catch {
    return 'a value without a text form'; // Object.create(null), say
  }
}
