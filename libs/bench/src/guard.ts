/** One Guard REST call of a benchmark with the given key: JSON in, `data` out; any status ≥ 300 throws. */
export function guardCaller(baseUrl: string, apiKey: string) {
  const auth = { authorization: `Bearer ${apiKey}` };
  return async function call<T>(
    method: string,
    route: string,
    body?: unknown,
  ): Promise<{ status: number; data: T }> {
    const response = await fetch(`${baseUrl}${route}`, {
      method,
      headers: { ...auth, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    if (response.status >= 300) throw new Error(`${method} ${route} answered ${response.status}: ${text}`);
    return { status: response.status, data: (JSON.parse(text) as { data: T }).data };
  };
}
