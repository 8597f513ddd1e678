import { execFileSync } from 'child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import PDFDocument from 'pdfkit';
import sharp from 'sharp';
import { deflateSync, inflateSync } from 'zlib';
import { pngChunk as chunk, rgbaPng } from '../../../test/support/png';
import { uidFromSeed } from '../report-filing.service';
import type { ReportDocument, ReportPart } from './report-document';
import { reportFont } from './report-fonts';
import { breakLongRuns, LONG_RUN, personName, printable, renderReport, resolveLayout } from './render-report';

/**
 * What poppler reads of a PDF: its text (pdftotext), the images its pages draw and how many image
 * objects those are (pdfimages), and its fonts (pdffonts).
 */
function readPdf(pdf: Buffer): { text: string; images: number; imageObjects: number; fonts: string } {
  const dir = mkdtempSync(join(tmpdir(), 'render-report-'));
  try {
    const file = join(dir, 'r.pdf');
    writeFileSync(file, pdf);
    const text = execFileSync('pdftotext', [file, '-']).toString();
    const rows = execFileSync('pdfimages', ['-list', file]).toString().trim().split('\n').slice(2);
    const objects = new Set(rows.map((row) => row.trim().split(/\s+/)[10]));
    const fonts = execFileSync('pdffonts', [file]).toString();
    return { text, images: rows.length, imageObjects: objects.size, fonts };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const dataUrl = (type: 'png' | 'jpeg', bytes: Buffer) => `data:image/${type};base64,${bytes.toString('base64')}`;

/** `png` with its pixel data (the IDAT chunks, inflated) changed by `change`, in one IDAT with sound CRCs. */
function withPixels(png: Buffer, change: (pixels: Buffer) => void): Buffer {
  const chunks: Array<{ type: string; data: Buffer }> = [];
  for (let pos = 8; pos < png.length;) {
    const length = png.readUInt32BE(pos);
    chunks.push({ type: png.toString('ascii', pos + 4, pos + 8), data: png.subarray(pos + 8, pos + 8 + length) });
    pos += 12 + length;
  }
  const pixels = inflateSync(Buffer.concat(chunks.filter((c) => c.type === 'IDAT').map((c) => c.data)));
  change(pixels);
  const rest = chunks.filter((c) => c.type !== 'IDAT' && c.type !== 'IEND' && c.type !== 'IHDR');
  return Buffer.concat([
    png.subarray(0, 8),
    chunk('IHDR', chunks[0].data),
    ...rest.map((c) => chunk(c.type, c.data)),
    chunk('IDAT', deflateSync(pixels)),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

function reportDocument(parts: Partial<ReportPart>[], letterhead: Partial<ReportDocument['letterhead']> = {}): ReportDocument {
  return {
    letterhead: {
      clinic_name: 'Clínica Exemplo',
      unit_name: 'Unidade Centro',
      logo: null,
      layout: {},
      page: {},
      background: null,
      patient: { name: 'MARIA DA CONCEIÇÃO', id: 'PID-1', birth_date: '1970-02-03', sex: 'F' },
      study: { date: '2024-03-05', description: 'TC de tórax', accession_number: 'ACC-1', modalities: ['CT'] },
      ...letterhead,
    },
    parts: parts.map((part) => ({
      kind: 'report',
      signed: null,
      indication: null,
      technique: null,
      findings: null,
      impression: null,
      ...part,
    })),
    draft: parts.some((part) => !part.signed),
  };
}

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
      font: { regular: 'DejaVuSerif', bold: 'DejaVuSerif-Bold' },
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
      font: { regular: 'DejaVuSans' },
      size: 10,
      color: '#222222',
    });
  });

  it("takes the default font for a name that is only a property every object has ('constructor', '__proto__')", () => {
    for (const font of ['constructor', '__proto__', 'Constructor']) {
      expect(resolveLayout({ typography: { font } }, {}).font).toEqual({ regular: 'DejaVuSans', bold: 'DejaVuSans-Bold' });
    }
  });
});

describe('printable', () => {
  it('composes accents (NFC), turns tabs and other control characters into spaces and CRLF into LF', () => {
    expect(printable('Sa\u0303o JOA\u0303O')).toBe('São JOÃO');
    expect(printable('a\ttab')).toBe('a tab');
    expect(printable('x\u0000y\u0007z\u000cw\u0085v')).toBe('x y z w v');
    expect(printable('one\r\ntwo\rthree\nfour')).toBe('one\ntwo\nthree\nfour');
    expect(printable('≥ ≤ µ β × ± −')).toBe('≥ ≤ µ β × ± −');
  });
});

describe('personName', () => {
  it('reads a DICOM person name as people do: family name, then prefix, given and middle names and suffix', () => {
    expect(personName('SOUZA^ANA')).toBe('SOUZA, ANA');
    expect(personName('SÃO JOSÉ^MARIA DA CONCEIÇÃO^^Dra.^Filha')).toBe('SÃO JOSÉ, Dra. MARIA DA CONCEIÇÃO Filha');
    expect(personName('SOUZA^ANA^MARIA=ソウザ^アナ')).toBe('SOUZA, ANA MARIA');
    expect(personName('SOUZA^^')).toBe('SOUZA');
    expect(personName('^ANA')).toBe('ANA');
    expect(personName('MARIA DA SILVA')).toBe('MARIA DA SILVA');
    expect(personName('')).toBe('');
  });
});

describe('renderReport', () => {
  it('prints text outside Windows-1252 as written: pdftotext reads it back (NFC), in the fonts it embeds', async () => {
    const findings = 'Nodule ≥ 6 mm, ≤ 8 mm; β-HCG 5 µg/L; 3 × 4 cm ± 2; − 5; Sa\u0303o Paulo; a\ttab. Then more text.';
    const pdf = await renderReport(
      reportDocument(
        [
          {
            findings,
            impression: 'Tabs\tin\tthe impression; Ω ≠ ∞',
            signed: { name: 'Dr. JOA\u0303O Conceição', crm: '123456/SP', at: '2024-03-05T10:00:00Z', image: null },
          },
        ],
        { patient: { name: 'DA SILVA^JOA\u0303O^PEDRO', id: 'PID-2', birth_date: null, sex: 'M' } },
      ),
    );
    const { text, fonts } = readPdf(pdf);
    for (const expected of [
      'Nodule ≥ 6 mm, ≤ 8 mm; β-HCG 5 µg/L; 3 × 4 cm ± 2; − 5; São Paulo; a tab. Then more text.',
      'Tabs in the impression; Ω ≠ ∞',
      'DA SILVA, JOÃO PEDRO',
      'Dr. JOÃO Conceição',
      'Clínica Exemplo',
      'CRM 123456/SP',
    ]) {
      expect(text.replace(/[ \t]+/g, ' ')).toContain(expected);
    }
    // The combining tilde never reaches the PDF on its own; nor does the name's component separator.
    expect(text).not.toContain('\u0303');
    expect(text).not.toContain('^');
    // DejaVu, embedded as a subset (name prefixed with a tag), never a standard font read as WinAnsi.
    expect(fonts).toMatch(/[A-Z]{6}\+DejaVuSans\s/);
    expect(fonts).toMatch(/[A-Z]{6}\+DejaVuSans-Bold\s/);
    expect(fonts).not.toMatch(/Helvetica|Times|Courier/);
    // The subset keeps a one-page report small (DejaVuSans.ttf alone is 740 KiB).
    expect(pdf.length).toBeLessThan(100 * 1024);
  });

  it('prints in the template’s typeface: times and courier are DejaVu Serif and Sans Mono', async () => {
    for (const [font, name] of [
      ['times', 'DejaVuSerif'],
      ['courier', 'DejaVuSansMono'],
    ]) {
      const findings = 'Lesão de 12 mm, β-HCG ≥ 25 mUI/mL';
      const pdf = await renderReport(reportDocument([{ findings }], { layout: { typography: { font } } }));
      const { text, fonts } = readPdf(pdf);
      expect(text).toContain(findings);
      expect(fonts).toMatch(new RegExp(`[A-Z]{6}\\+${name}\\s`));
    }
  });

  it.each([['zlib_header'], ['bad_filter']] as const)(
    'leaves out, with a warning, an image pdfkit cannot decode (%s): the report still prints',
    async (broken) => {
      const corrupt = dataUrl('png', rgbaPng(broken));
      const warnings: string[] = [];
      const pdf = await renderReport(
        reportDocument(
          [
            {
              findings: 'Sem alterações.',
              signed: { name: 'Dr. Ana', crm: '1/SP', at: '2024-03-05T10:00:00Z', image: corrupt },
            },
          ],
          { logo: corrupt, background: { data_url: corrupt, opacity: 0.2 } },
        ),
        (warning) => warnings.push(warning),
      );
      const { text, images } = readPdf(pdf);
      expect(text).toContain('Sem alterações.');
      expect(text).toContain('Dr. Ana');
      expect(images).toBe(0);
      expect(warnings.sort()).toEqual(
        ['clinic logo', 'signature', 'template background'].map(
          (what) => `The ${what} is left out of the report PDF: its PNG pixel data does not decode`,
        ),
      );
    },
  );

  it('still draws sound images (a PNG with alpha, a JPEG), each embedded once however many pages draw it', async () => {
    const sound = dataUrl('png', rgbaPng());
    const jpeg = dataUrl(
      'jpeg',
      await sharp({ create: { width: 8, height: 8, channels: 3, background: '#808080' } })
        .jpeg()
        .toBuffer(),
    );
    const long = 'Parênquima com atenuação normal. '.repeat(400);
    const pdf = await renderReport(
      reportDocument([{ findings: long, signed: { name: 'Dr. Ana', crm: null, at: '2024-03-05T10:00:00Z', image: jpeg } }], {
        logo: sound,
        background: { data_url: sound, opacity: 0.2 },
      }),
    );
    const { text, images, imageObjects } = readPdf(pdf);
    const pages = text.split('\f').filter((page) => page.trim() !== '').length;
    expect(pages).toBeGreaterThan(1);
    // pdfimages lists an image each time a page draws it: background and logo on every page, one
    // signature (an RGBA PNG counts twice: its colour and its alpha mask)...
    expect(images).toBe(pages * 2 * 2 + 1);
    // ...and they are 3 image objects in the file (a mask is listed under its image's): background,
    // logo and signature.
    expect(imageObjects).toBe(3);
  });

  it('checks interlaced PNGs as png-js walks them: a sound one is drawn, one with a bad filter in a late pass left out', async () => {
    const interlaced = await sharp({ create: { width: 16, height: 16, channels: 3, background: '#3050a0' } })
      .png({ progressive: true, compressionLevel: 0 })
      .toBuffer();
    expect(interlaced[28]).toBe(1); // IHDR's interlace method: Adam7
    const warnings: string[] = [];
    const render = async (png: Buffer) =>
      readPdf(
        await renderReport(reportDocument([{ findings: 'Achados.' }], { logo: dataUrl('png', png) }), (w) => warnings.push(w)),
      );
    expect((await render(interlaced)).images).toBe(1);
    expect(warnings).toEqual([]);
    // The last scanline of pass 7 (16 pixels of 3 bytes) gets filter type 9.
    const broken = withPixels(interlaced, (pixels) => {
      pixels[pixels.length - (1 + 16 * 3)] = 9;
    });
    const read = await render(broken);
    expect(read.images).toBe(0);
    expect(read.text).toContain('Achados.');
    expect(warnings).toEqual(['The clinic logo is left out of the report PDF: its PNG pixel data does not decode']);
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

describe('breakLongRuns (a run of characters without whitespace laid out in linear time)', () => {
  const WIDTH = 300;
  const doc = () => {
    const d = new PDFDocument({ size: 'A4' });
    d.registerFont('DejaVuSans', reportFont('DejaVuSans') as unknown as PDFKit.Mixins.PDFFontSource);
    return d.font('DejaVuSans').fontSize(10);
  };

  it('cuts a long run into lines no wider than the width, as written once joined, each starting a line', () => {
    const d = doc();
    const run = 'W'.repeat(400) + 'i'.repeat(600) + '0123456789'.repeat(30);
    const text = `Lesion: ${run} and more.\nNext ${'x'.repeat(LONG_RUN)}`;
    const out = breakLongRuns(d, text, WIDTH);
    expect(out.replace(/\n/g, '')).toBe(text.replace(/\n/g, ''));
    const lines = out.split('\n');
    expect(lines[0]).toBe('Lesion: ');
    expect(lines).toContain('Next ');
    const cut = lines.slice(
      1,
      lines.findIndex((line) => line.endsWith(' and more.')),
    );
    expect(cut.join('').length).toBeGreaterThan(run.length * 0.9);
    for (const line of lines.filter((l) => !l.includes(' '))) expect(d.widthOfString(line)).toBeLessThanOrEqual(WIDTH);
    // Filled: no line of the run but its last is under 90% of the width.
    for (const line of cut) expect(d.widthOfString(line)).toBeGreaterThan(WIDTH * 0.9);
  });

  it('leaves text without such a run as it is, and never splits a grapheme cluster', () => {
    const d = doc();
    const words = `${'y'.repeat(LONG_RUN - 1)} ${'a-b/'.repeat(40)} normal words`;
    expect(breakLongRuns(d, words, WIDTH)).toBe(words);
    const clustered = 'q\u0303'.repeat(LONG_RUN);
    for (const line of breakLongRuns(d, clustered, WIDTH).split('\n')) expect(line).toMatch(/^(q\u0303)+$/);
  });

  it('prints a 20,000-character word of a section whole: pdftotext reads it back line by line', async () => {
    // Letters no heading, label or letterhead of the page has, so the word is read back whatever surrounds it.
    const word = Array.from({ length: 20_000 }, (_, n) => 'qzjk'[n % 4]).join('');
    const { text } = readPdf(await renderReport(reportDocument([{ findings: `Start ${word} end.` }])));
    expect(text.replace(/[^qzjk]/g, '')).toBe(word);
  });
});
