/** ISO 4217 codes in use, as the runtime's ICU data knows them (e.g. USD, EUR, JPY). */
const known = new Set(Intl.supportedValuesOf('currency'));

/** Whether `code` is an ISO 4217 currency code in upper case. */
export const isCurrencyCode = (code: string): boolean => /^[A-Z]{3}$/.test(code) && known.has(code);
