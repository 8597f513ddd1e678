import { loggedUrl } from './logged-url';

describe('loggedUrl', () => {
  it.each([
    ['/api/studies?page=2', '/api/studies?page'],
    ['/api/studies?page=1&search=DOE%5EJOHN', '/api/studies?page&search'],
    [
      '/api/dicom-web/studies?PatientName=SILVA*&PatientID=123-45&limit=5',
      '/api/dicom-web/studies?PatientName&PatientID&limit',
    ],
    ['/api/x?token=abc&page=2', '/api/x?token&page'],
    ['/api/x?access_token=abc', '/api/x?access_token'],
    ['/api/x?%74oken=abc', '/api/x?[key]'],
    ['/api/studies?MARIA%20DA%20SILVA', '/api/studies?[key]'],
    ['/api/studies?' + 'k'.repeat(41) + '=1', '/api/studies?[key]'],
    ['/api/x?&&a=1&', '/api/x?a'],
    ['/api/x', '/api/x'],
    [undefined, undefined],
  ])('logs %s as %s', (url, expected) => {
    expect(loggedUrl(url)).toBe(expected);
  });
});
