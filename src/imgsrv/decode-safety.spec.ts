import { imageTagsFromSimplified, renderRefusal } from './decode-safety';

describe('renderRefusal (what the image server is not asked to decode)', () => {
  const us = (value: number) => ({ vr: 'US', Value: [value] });
  const ct = {
    '00280002': us(1),
    '00280004': { vr: 'CS', Value: ['MONOCHROME2'] },
    '00280010': us(512),
    '00280011': us(512),
    '00280100': us(16),
  };

  it('decodes what devices write: a CT slice, an RGB secondary capture, a 4k x 5k mammogram, attributes left out', () => {
    expect(renderRefusal(ct)).toBeNull();
    expect(renderRefusal({ ...ct, '00280002': us(3), '00280004': { vr: 'CS', Value: ['RGB'] }, '00280100': us(8) })).toBeNull();
    expect(renderRefusal({ ...ct, '00280010': us(5120), '00280011': us(4096) })).toBeNull();
    expect(renderRefusal({ '00280010': us(512), '00280011': us(512) })).toBeNull();
  });

  it.each([
    ['Rows as UL', { '00280010': { vr: 'UL', Value: [512] } }, 'Rows is UL, not US'],
    ['Columns as UL', { '00280011': { vr: 'UL', Value: [70000] } }, 'Columns is UL, not US'],
    ['two Rows values', { '00280010': { vr: 'US', Value: [512, 512] } }, 'Rows is not one value of 1 to 65535'],
    ['no Rows', { '00280010': undefined }, 'Rows is not one value of 1 to 65535'],
    ['zero Columns', { '00280011': us(0) }, 'Columns is not one value of 1 to 65535'],
    ['BitsAllocated as UL', { '00280100': { vr: 'UL', Value: [16] } }, 'BitsAllocated is UL, not US'],
    ['BitsAllocated 12', { '00280100': us(12) }, 'BitsAllocated 12'],
    ['SamplesPerPixel 2', { '00280002': us(2) }, 'SamplesPerPixel 2'],
    ['PALETTE COLOR', { '00280004': { vr: 'CS', Value: ['PALETTE COLOR '] } }, 'PALETTE COLOR'],
    ["Philips' private compression", { '07A11011': { vr: 'CS', Value: ['PMSCT_RLE1'] } }, "Philips' private compression"],
    [
      'a frame past 32 bits of bytes',
      { '00280002': us(3), '00280010': us(65535), '00280011': us(65535), '00280100': us(32) },
      'a frame of 51538034700 bytes',
    ],
  ])('refuses %s', (_name, change, reason) => {
    expect(renderRefusal({ ...ct, ...change })).toBe(reason);
  });

  it('reads simplified tags (no VRs) the same way', () => {
    const simplified = { Rows: '512', Columns: '512', BitsAllocated: '16', PhotometricInterpretation: 'MONOCHROME2' };
    expect(renderRefusal(imageTagsFromSimplified(simplified))).toBeNull();
    expect(renderRefusal(imageTagsFromSimplified({ ...simplified, Rows: '512\\512' }))).toBe(
      'Rows is not one value of 1 to 65535',
    );
    expect(renderRefusal(imageTagsFromSimplified({ ...simplified, PhotometricInterpretation: 'PALETTE COLOR' }))).toBe(
      'PALETTE COLOR',
    );
    expect(renderRefusal(imageTagsFromSimplified({ ...simplified, '07a1,1011': 'PMSCT_RLE1' }))).toBe(
      "Philips' private compression",
    );
    expect(renderRefusal(imageTagsFromSimplified(null))).toBe('Rows is not one value of 1 to 65535');
  });
});
