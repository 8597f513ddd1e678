import { CRM_PATTERN } from './crm';

describe('CRM_PATTERN', () => {
  it.each(['1234/SP', '12345/RJ', '123456/MG'])('accepts %s', (value) => {
    expect(CRM_PATTERN.test(value)).toBe(true);
  });

  it.each(['123/SP', '1234567/SP', '1234/sp', '1234/S', '1234/SPX', '1234-SP', ' 1234/SP', '1234/SP ', '١٢٣٤/SP', ''])(
    'refuses %j',
    (value) => {
      expect(CRM_PATTERN.test(value)).toBe(false);
    },
  );
});
