import { canonicalAddress, quarantineReason, sameAddress } from './device-identity';

describe('canonicalAddress', () => {
  it.each([
    ['127.0.0.1', '127.0.0.1'],
    [' 10.8.0.12 ', '10.8.0.12'],
    ['::ffff:127.0.0.1', '127.0.0.1'],
    ['::FFFF:127.0.0.1', '127.0.0.1'],
    ['::ffff:7f00:1', '127.0.0.1'],
    ['0:0:0:0:0:ffff:a08:c', '10.8.0.12'],
    ['fd00::8:12', 'fd00:0:0:0:0:0:8:12'],
    ['FD00:0:0:0:0:0:0008:0012', 'fd00:0:0:0:0:0:8:12'],
    ['::1', '0:0:0:0:0:0:0:1'],
    ['fe80::1%eth0', 'fe80:0:0:0:0:0:0:1%eth0'],
  ])('reads %j as %j', (text, canonical) => {
    expect(canonicalAddress(text)).toBe(canonical);
  });

  it.each([
    null,
    undefined,
    '',
    '  ',
    'device.local',
    '999.1.1.1',
    '127.1',
    '0x7f.0.0.1',
    '127.000.0.1',
    '10.0.0.1/24',
    'fd00::8::12',
  ])('gives null for %j (not an address, or not a strict spelling of one)', (text) => {
    expect(canonicalAddress(text)).toBeNull();
  });
});

describe('sameAddress', () => {
  it('counts an IPv4-mapped IPv6 address as its IPv4 address, both ways', () => {
    expect(sameAddress('::ffff:127.0.0.1', '127.0.0.1')).toBe(true);
    expect(sameAddress('127.0.0.1', '::ffff:7f00:1')).toBe(true);
  });

  it('compares IPv6 addresses whatever their spelling', () => {
    expect(sameAddress('fd00::8:12', 'FD00:0000::0008:0012')).toBe(true);
    expect(sameAddress('fd00::8:12', 'fd00::8:13')).toBe(false);
  });

  it('tells different addresses apart', () => {
    expect(sameAddress('127.0.0.1', '127.0.0.2')).toBe(false);
    // ::1 is IPv6 loopback, not 127.0.0.1; and an IPv4-mapped address of another host is another host.
    expect(sameAddress('::1', '127.0.0.1')).toBe(false);
    expect(sameAddress('::ffff:10.0.0.1', '127.0.0.1')).toBe(false);
  });

  it('is never true when either side is missing or not an address, even when both are the same text', () => {
    expect(sameAddress(null, null)).toBe(false);
    expect(sameAddress('', '')).toBe(false);
    expect(sameAddress('device.local', 'device.local')).toBe(false);
    expect(sameAddress('127.0.0.1', undefined)).toBe(false);
  });
});

describe('quarantineReason', () => {
  const registered = { ip_address: '10.8.0.12' };

  it('places (null) a study from the registered AE title at the registered address, in any spelling', () => {
    expect(quarantineReason({ aet: 'CT_ROOM1', ip: '10.8.0.12' }, registered)).toBeNull();
    expect(quarantineReason({ aet: 'CT_ROOM1', ip: '::ffff:10.8.0.12' }, registered)).toBeNull();
  });

  it('quarantines an unknown or missing AE title as unknown_aet', () => {
    expect(quarantineReason({ aet: 'NOBODY', ip: '10.8.0.12' }, null)).toBe('unknown_aet');
    expect(quarantineReason({ aet: null, ip: '10.8.0.12' }, registered)).toBe('unknown_aet');
  });

  it('quarantines a registered AE title from another, a missing or an unreadable address as address_mismatch', () => {
    expect(quarantineReason({ aet: 'CT_ROOM1', ip: '10.8.0.13' }, registered)).toBe('address_mismatch');
    expect(quarantineReason({ aet: 'CT_ROOM1', ip: null }, registered)).toBe('address_mismatch');
    expect(quarantineReason({ aet: 'CT_ROOM1', ip: 'garbage' }, registered)).toBe('address_mismatch');
  });
});
