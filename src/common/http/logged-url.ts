/** A query key as it is logged: names of parameters, never text a client typed into them. */
const PLAIN_KEY = /^[A-Za-z0-9_.,-]{1,40}$/;

/**
 * A request URL as the API's logs write it: the path and the query's keys, without their values.
 * Values carry what must not reach a log: search text (patient names), Patient IDs, tokens a client
 * put in a URL (the viewer's `token=`). A key that does not look like a parameter name (it could be
 * text sent without `=`) is written as `[key]`. `/api/studies?page=2&search=DOE` -> `/api/studies?page&search`.
 */
export function loggedUrl(url: string | undefined): string | undefined {
  if (url === undefined) return url;
  const queryAt = url.indexOf('?');
  if (queryAt === -1) return url;
  const keys = url
    .slice(queryAt + 1)
    .split('&')
    .filter((part) => part !== '')
    .map((part) => {
      const eq = part.indexOf('=');
      const key = eq === -1 ? part : part.slice(0, eq);
      return PLAIN_KEY.test(key) ? key : '[key]';
    });
  return `${url.slice(0, queryAt)}?${keys.join('&')}`;
}
