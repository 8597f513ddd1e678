import { loggedUrl } from './logged-url';

describe('loggedUrl', () => {
  it.each([
    ['/api/studies?page=2', '/api/studies?page=2'],
    ['/api/x?token=abc&page=2', '/api/x?token=[redacted]&page=2'],
    ['/api/x?a=1&TOKEN=abc&token=def', '/api/x?a=1&TOKEN=[redacted]&token=[redacted]'],
    ['/api/x?access_token=abc', '/api/x?access_token=[redacted]'],
    ['/api/x?%74oken=abc', '/api/x?%74oken=[redacted]'],
    ['/api/x?%74oken%ZZ=abc', '/api/x?%74oken%ZZ=[redacted]'],
    ['/api/x', '/api/x'],
    [undefined, undefined],
  ])('logs %s as %s', (url, expected) => {
    expect(loggedUrl(url)).toBe(expected);
  });
});
