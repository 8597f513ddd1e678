import { uidFromSeed } from '../report-filing.service';
import { resolveLayout } from './render-report';

describe('resolveLayout', () => {
  it('reads a template’s layout and page documents', () => {
    const layout = resolveLayout(
      {
        regions: { header: { height: 120, text: 'Rua A, 1' }, footer: { height: 30, text: 'CNPJ' } },
        slots: {
          logo: { align: 'right', width: 80 },
          unit_name: { align: 'center' },
          signature: { align: 'left', visible: false },
        },
        typography: { font: 'Times', size: 11, heading_size: 14, color: '#102030' },
      },
      { margins: { top: 20, right: 30, bottom: 40, left: 50 } },
    );
    expect(layout).toMatchObject({
      header: { height: 120, text: 'Rua A, 1' },
      footer: { height: 30, text: 'CNPJ' },
      logo: { align: 'right', width: 80, visible: true },
      unitName: { align: 'center' },
      signature: { align: 'left', visible: false },
      font: { regular: 'Times-Roman', bold: 'Times-Bold' },
      size: 11,
      headingSize: 14,
      color: '#102030',
      margins: { top: 20, right: 30, bottom: 40, left: 50 },
    });
  });

  it('falls back to the defaults for anything missing, of the wrong type or out of range', () => {
    const layout = resolveLayout(
      {
        regions: [],
        slots: { logo: { align: 'middle', width: 1e9 } },
        typography: { font: 'Comic', size: '12', color: 'red' },
      },
      { margins: null },
    );
    expect(layout).toEqual(resolveLayout({}, {}));
    expect(layout).toMatchObject({
      logo: { align: 'left', width: 120 },
      font: { regular: 'Helvetica' },
      size: 10,
      color: '#222222',
    });
  });
});

describe('uidFromSeed', () => {
  it('makes the same valid DICOM UID (root 2.25, at most 64 characters) from the same seed', () => {
    const uid = uidFromSeed('report-series:abc');
    expect(uid).toMatch(/^2\.25\.(0|[1-9][0-9]*)$/);
    expect(uid.length).toBeLessThanOrEqual(64);
    expect(uidFromSeed('report-series:abc')).toBe(uid);
    expect(uidFromSeed('report-series:abd')).not.toBe(uid);
  });
});
