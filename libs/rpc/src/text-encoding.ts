import { configureTextEncoding } from '@bufbuild/protobuf/wire';

/**
 * protobuf-es decodes string fields with a default TextDecoder, which drops a leading U+FEFF as a byte
 * order mark: an id or name sent as "\uFEFFx" arrived as "x" (and "\uFEFF" as "", a different request).
 * Fields are text, not documents, so every character must cross the wire as it was sent.
 */
export function keepByteOrderMarks(): void {
  const encoder = new TextEncoder();
  const lenient = new TextDecoder('utf-8', { ignoreBOM: true });
  const strict = new TextDecoder('utf-8', { ignoreBOM: true, fatal: true });
  configureTextEncoding({
    encodeUtf8: (text) => encoder.encode(text),
    decodeUtf8: (bytes, validate) => (validate ? strict : lenient).decode(bytes),
    checkUtf8: (text) => text.isWellFormed(),
  });
}
