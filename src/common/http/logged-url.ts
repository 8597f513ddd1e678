/**
 * A request URL as the API's request log writes it: the value of any query parameter whose name
 * holds "token" (in any case, percent-encoded or not: the viewer's `token=`, an `access_token=`)
 * is replaced, so that a token a client put in a URL never reaches the logs.
 */
export function loggedUrl(url: string | undefined): string | undefined {
  if (url === undefined) return url;
  const queryAt = url.indexOf('?');
  if (queryAt === -1) return url;
  const query = url
    .slice(queryAt + 1)
    .split('&')
    .map((part) => {
      const eq = part.indexOf('=');
      return eq !== -1 && /token/i.test(decodedName(part.slice(0, eq))) ? `${part.slice(0, eq)}=[redacted]` : part;
    })
    .join('&');
  return `${url.slice(0, queryAt)}?${query}`;
}

function decodedName(name: string): string {
  try {
    return decodeURIComponent(name.replace(/\+/g, ' '));
  } catch {
    // Broken encoding: judge the name as written, and the token-like part of it.
    return name.replace(/%[0-9a-f]{2}/gi, (escape) => String.fromCharCode(parseInt(escape.slice(1), 16)));
  }
}
