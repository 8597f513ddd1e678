import { Logger } from '@nestjs/common';
import PDFDocument from 'pdfkit';
import { inflateSync } from 'zlib';
import { ReportDocument, ReportLetterhead, ReportPart, ReportSignature, SECTION_NAMES } from './report-document';
import { DEFAULT_REPORT_FONT, REPORT_FONTS, ReportFont, reportFont } from './report-fonts';

/** A4 in PDF points, as pdfkit sizes it. */
export const A4 = { width: 595.28, height: 841.89 };

const SECTION_TITLES: Record<(typeof SECTION_NAMES)[number], string> = {
  indication: 'Indication',
  technique: 'Technique',
  findings: 'Findings',
  impression: 'Impression',
};

/** Where the renderer reports what it left out; a render thread sends it to the pool's logger. */
export type RenderWarn = (message: string) => void;

const logger = new Logger('ReportPdf');
const logWarning: RenderWarn = (message) => logger.warn(message);

type Align = 'left' | 'center' | 'right';

/**
 * The template's layout document as the renderer reads it, each value checked and defaulted
 * (templates store `layout` and `page` as free JSON objects):
 * `layout.regions.{header,footer}.{height,text}`, `layout.slots.{logo,unit_name,signature}.{align,width}`
 * (`visible: false` hides a slot), `layout.typography.{font,size,heading_size,color}`,
 * `page.margins.{top,right,bottom,left}`.
 */
export interface ResolvedLayout {
  header: { height: number; text: string | null };
  footer: { height: number; text: string | null };
  logo: { align: Align; width: number; visible: boolean };
  unitName: { align: Align; visible: boolean };
  signature: { align: Align; width: number; visible: boolean };
  font: ReportFont;
  size: number;
  headingSize: number;
  color: string;
  margins: { top: number; right: number; bottom: number; left: number };
}

const obj = (value: unknown): Record<string, unknown> =>
  value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
const num = (value: unknown, min: number, max: number, fallback: number): number =>
  typeof value === 'number' && Number.isFinite(value) && value >= min && value <= max ? value : fallback;
const text = (value: unknown, max = 500): string | null =>
  typeof value === 'string' && value.trim() !== '' ? value.slice(0, max) : null;
const align = (value: unknown, fallback: Align): Align =>
  value === 'left' || value === 'center' || value === 'right' ? value : fallback;
const color = (value: unknown): string => (typeof value === 'string' && /^#[0-9a-f]{6}$/i.test(value) ? value : '#222222');

export function resolveLayout(layout: Record<string, unknown>, page: Record<string, unknown>): ResolvedLayout {
  const regions = obj(layout.regions);
  const slots = obj(layout.slots);
  const typography = obj(layout.typography);
  const header = obj(regions.header);
  const footer = obj(regions.footer);
  const logo = obj(slots.logo);
  const unitName = obj(slots.unit_name);
  const signature = obj(slots.signature);
  const margins = obj(page.margins);
  // Own keys only: a template may name 'constructor' or '__proto__', which every object has.
  const fontName = String(typography.font ?? '').toLowerCase();
  const font = Object.hasOwn(REPORT_FONTS, fontName) ? REPORT_FONTS[fontName] : DEFAULT_REPORT_FONT;
  const size = num(typography.size, 6, 18, 10);
  return {
    header: { height: num(header.height, 40, 250, 90), text: text(header.text) },
    footer: { height: num(footer.height, 20, 150, 40), text: text(footer.text) },
    logo: { align: align(logo.align, 'left'), width: num(logo.width, 20, 250, 120), visible: logo.visible !== false },
    unitName: { align: align(unitName.align, 'right'), visible: unitName.visible !== false },
    signature: {
      align: align(signature.align, 'right'),
      width: num(signature.width, 40, 250, 150),
      visible: signature.visible !== false,
    },
    font,
    size,
    headingSize: num(typography.heading_size, 6, 24, size + 2),
    color: color(typography.color),
    margins: {
      top: num(margins.top, 10, 200, 36),
      right: num(margins.right, 10, 200, 50),
      bottom: num(margins.bottom, 10, 200, 36),
      left: num(margins.left, 10, 200, 50),
    },
  };
}

/**
 * Text as the PDF carries it. Composed (NFC): "São" typed as a + combining tilde would print the
 * tilde as a glyph of its own, which text extraction reads back as "Sã o". Control characters (a
 * tab, a bell, a form feed) have no glyph, and pdfkit's line breaking takes some of them as breaks:
 * each becomes a space. CRLF and CR become LF, the line break pdfkit knows.
 */
export function printable(value: string): string {
  return value
    .normalize('NFC')
    .replace(/\r\n?/g, '\n')
    .replace(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/g, ' ');
}

/** A run of this many characters without whitespace is cut into lines here (breakLongRuns), not by pdfkit. */
export const LONG_RUN = 200;
const LONG_RUNS = new RegExp(`\\S{${LONG_RUN},}`, 'gu');
const graphemes = new Intl.Segmenter('und', { granularity: 'grapheme' });

/**
 * pdfkit lays out a word wider than the line one line at a time and measures the rest of the word
 * again after each line: quadratic in the word's length (a 20,000-character word, within a
 * section's limit, took 8.8 s of the render thread; 5,000 took 0.46 s). So a run of LONG_RUN or
 * more characters without whitespace (no report word or address is that long) is cut here, between
 * grapheme clusters, into lines no wider than `width` in the document's current font and size, each
 * cluster measured once. It starts on a line of its own. Shorter text is left to pdfkit as written.
 */
export function breakLongRuns(doc: PDFKit.PDFDocument, text: string, width: number): string {
  // A hair under the width: the clusters are measured one by one, the line as a whole (kerning).
  const room = width * 0.99;
  return text.replace(LONG_RUNS, (run, offset: number) => {
    const widths = new Map<string, number>();
    const lines: string[] = [];
    let line = '';
    let used = 0;
    for (const { segment } of graphemes.segment(run)) {
      let w = widths.get(segment);
      if (w === undefined) widths.set(segment, (w = doc.widthOfString(segment)));
      if (used + w > room && line !== '') {
        lines.push(line);
        line = '';
        used = 0;
      }
      line += segment;
      used += w;
    }
    lines.push(line);
    const startsLine = offset === 0 || text[offset - 1] === '\n';
    return (startsLine ? '' : '\n') + lines.join('\n');
  });
}

function imageBytes(dataUrl: string | null | undefined): Buffer | null {
  if (!dataUrl) return null;
  const match = /^data:image\/(?:png|jpeg);base64,(.*)$/s.exec(dataUrl);
  return match ? Buffer.from(match[1], 'base64') : null;
}

/** The png-js parse that pdfkit keeps of a PNG (`image` of what `openImage` returns). */
interface PngData {
  width: number;
  height: number;
  imgData: Uint8Array;
  pixelBitlength: number;
  interlaceMethod: number;
  hasAlphaChannel: boolean;
  transparency: { indexed?: number[] };
}

/** An image pdfkit has parsed (JPEG or PNG) and will embed once however many pages draw it. */
interface PdfImage {
  width: number;
  height: number;
  image?: PngData | null;
}

/** pdfkit's openImage, which @types/pdfkit leaves out. */
type ImageOpener = { openImage(src: Buffer): PdfImage };

/** Adam7's passes as png-js walks them: x0, y0, dx, dy. */
const ADAM7 = [
  [0, 0, 8, 8],
  [4, 0, 8, 8],
  [0, 4, 4, 8],
  [2, 0, 4, 4],
  [0, 2, 2, 4],
  [1, 0, 2, 2],
  [0, 1, 1, 2],
];

/**
 * Whether png-js will decode this PNG's pixel data without an error. pdfkit decodes a PNG with an
 * alpha channel, a transparent palette or interlacing in a zlib callback, where an error (data
 * that does not inflate, a scanline with an unknown filter) cannot be caught: it ends the render
 * thread. The same inflate and the same walk over the scanlines are done here first, where it can.
 * Other PNGs pdfkit copies into the PDF without decoding.
 */
function pngDecodes(png: PngData): boolean {
  if (!png.hasAlphaChannel && !png.transparency.indexed && png.interlaceMethod !== 1) return true;
  let data: Buffer;
  try {
    data = inflateSync(png.imgData);
  } catch {
    return false;
  }
  const pixelBytes = png.pixelBitlength / 8;
  let pos = 0;
  for (const [x0, y0, dx, dy] of png.interlaceMethod === 1 ? ADAM7 : [[0, 0, 1, 1]]) {
    const lineBytes = Math.ceil(pixelBytes * Math.ceil((png.width - x0) / dx));
    const rows = Math.ceil((png.height - y0) / dy);
    for (let row = 0; row < rows && pos < data.length; row++) {
      if (data[pos] > 4) return false;
      pos += 1 + (lineBytes > 0 ? lineBytes : 0);
    }
  }
  return true;
}

const reason = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/**
 * The image of a data URL, parsed by pdfkit and checked to embed, or null. Images are checked when
 * they are uploaded, but one that pdfkit cannot read (stored before that check decoded the whole
 * image, or that pdfkit reads differently) is left out with a warning: the report still prints.
 */
function openImage(
  doc: PDFKit.PDFDocument,
  dataUrl: string | null | undefined,
  what: string,
  warn: RenderWarn,
): PdfImage | null {
  const bytes = imageBytes(dataUrl);
  if (!bytes) return null;
  try {
    const image = (doc as unknown as ImageOpener).openImage(bytes);
    if (image.image && !pngDecodes(image.image)) throw new Error('its PNG pixel data does not decode');
    return image;
  } catch (error) {
    warn(`The ${what} is left out of the report PDF: ${reason(error)}`);
    return null;
  }
}

/** Draws an image of openImage; one that pdfkit still fails to embed is left out, as there. */
function drawImage(
  doc: PDFKit.PDFDocument,
  image: PdfImage,
  what: string,
  x: number,
  y: number,
  options: PDFKit.Mixins.ImageOption,
  warn: RenderWarn,
): void {
  try {
    doc.image(image as unknown as Buffer, x, y, options);
  } catch (error) {
    warn(`The ${what} is left out of the report PDF: ${reason(error)}`);
  }
}

const formatDate = (iso: string | null): string => {
  if (!iso) return '—';
  const [y, m, d] = iso.slice(0, 10).split('-');
  return y && m && d ? `${d}/${m}/${y}` : iso;
};
const formatDateTime = (iso: string): string => {
  const at = new Date(iso);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${pad(at.getUTCDate())}/${pad(at.getUTCMonth() + 1)}/${at.getUTCFullYear()} ${pad(at.getUTCHours())}:${pad(at.getUTCMinutes())} UTC`;
};
const sexLabel = (sex: string | null) => (sex === 'M' ? 'Male' : sex === 'F' ? 'Female' : '—');

/** Registers a report font under its name: pdfkit 0.20 takes a parsed fontkit font (not in @types/pdfkit). */
function registerFont(doc: PDFKit.PDFDocument, name: string): void {
  doc.registerFont(name, reportFont(name) as unknown as PDFKit.Mixins.PDFFontSource);
}

/** Renders the report PDF: A4, real text (embedded DejaVu), the template's letterhead on every page. */
export function renderReport(input: ReportDocument, warn: RenderWarn = logWarning): Promise<Buffer> {
  const { letterhead } = input;
  const layout = resolveLayout(letterhead.layout, letterhead.page);
  const m = layout.margins;
  const doc = new PDFDocument({
    size: 'A4',
    bufferPages: true,
    margins: { top: m.top + layout.header.height, bottom: m.bottom + layout.footer.height, left: m.left, right: m.right },
    info: {
      Title: printable(`Report — ${personName(letterhead.patient.name)}`),
      Creator: printable(letterhead.clinic_name),
      Producer: 'pacs-archive',
    },
  });
  // pdfkit embeds the glyphs the document uses (a subset), not the whole file.
  registerFont(doc, layout.font.regular);
  registerFont(doc, layout.font.bold);
  doc.font(layout.font.regular);
  const chunks: Buffer[] = [];
  const done = new Promise<Buffer>((resolve, reject) => {
    doc.on('data', (chunk: Buffer) => chunks.push(chunk));
    doc.on('end', () => resolve(Buffer.concat(chunks)));
    doc.on('error', reject);
  });

  // Opened once: every page draws the same embedded image.
  const background = letterhead.background ? openImage(doc, letterhead.background.data_url, 'template background', warn) : null;
  const logo = layout.logo.visible ? openImage(doc, letterhead.logo, 'clinic logo', warn) : null;
  const decorate = () => drawLetterhead(doc, layout, letterhead, background, logo, warn);
  doc.on('pageAdded', decorate);
  decorate();

  doc.fillColor(layout.color);
  drawPatientHeader(doc, layout, letterhead);
  input.parts.forEach((part, index) => drawPart(doc, layout, part, index, warn));
  drawFooters(doc, layout, input.draft);
  doc.end();
  return done;
}

function drawLetterhead(
  doc: PDFKit.PDFDocument,
  layout: ResolvedLayout,
  letterhead: ReportLetterhead,
  background: PdfImage | null,
  logo: PdfImage | null,
  warn: RenderWarn,
): void {
  const { x, y } = doc;
  const m = layout.margins;
  const width = A4.width - m.left - m.right;
  if (background && letterhead.background) {
    doc.save().opacity(letterhead.background.opacity);
    drawImage(doc, background, 'template background', 0, 0, { width: A4.width, height: A4.height }, warn);
    doc.restore();
  }
  const top = m.top;
  const height = layout.header.height - 16;
  if (logo) {
    const left =
      layout.logo.align === 'left'
        ? m.left
        : layout.logo.align === 'right'
          ? A4.width - m.right - layout.logo.width
          : (A4.width - layout.logo.width) / 2;
    drawImage(doc, logo, 'clinic logo', left, top, { fit: [layout.logo.width, height] }, warn);
  }
  if (layout.unitName.visible) {
    doc.font(layout.font.bold).fontSize(layout.headingSize).fillColor(layout.color);
    doc.text(printable(letterhead.clinic_name), m.left, top, { width, align: layout.unitName.align, lineBreak: false });
    doc.font(layout.font.regular).fontSize(layout.size);
    doc.text(printable(letterhead.unit_name), m.left, top + layout.headingSize + 4, {
      width,
      align: layout.unitName.align,
      lineBreak: false,
    });
  }
  if (layout.header.text) {
    doc.font(layout.font.regular).fontSize(layout.size - 1);
    doc.text(printable(layout.header.text), m.left, top + layout.headingSize + layout.size + 10, {
      width,
      align: layout.unitName.align,
      height: height - layout.headingSize - layout.size - 10,
      ellipsis: true,
    });
  }
  doc
    .moveTo(m.left, top + layout.header.height - 10)
    .lineTo(A4.width - m.right, top + layout.header.height - 10)
    .lineWidth(0.5)
    .strokeColor('#999999')
    .stroke();
  doc.font(layout.font.regular).fontSize(layout.size).fillColor(layout.color);
  doc.x = x;
  doc.y = y;
}

/**
 * A DICOM person name (PN) as people read it, as the archive's pages show it (viewer/login/shown.js):
 * its first, alphabetic group, the family name, then prefix, given and middle names and suffix
 * (`SOUZA^ANA^MARIA` is "SOUZA, ANA MARIA"); a name without components as it is.
 */
export function personName(pn: string): string {
  const [family = '', given = '', middle = '', prefix = '', suffix = ''] = pn.split('=')[0].split('^');
  const rest = [prefix, given, middle, suffix]
    .map((part) => part.trim())
    .filter(Boolean)
    .join(' ');
  return [family.trim(), rest].filter(Boolean).join(', ') || pn;
}

function drawPatientHeader(doc: PDFKit.PDFDocument, layout: ResolvedLayout, letterhead: ReportLetterhead): void {
  const { patient, study } = letterhead;
  const rows: Array<[string, string]> = [
    ['Patient', personName(patient.name)],
    ['Patient ID', patient.id],
    ['Birth date', formatDate(patient.birth_date)],
    ['Sex', sexLabel(patient.sex)],
    ['Study date', formatDate(study.date)],
    ['Description', study.description ?? '—'],
    ['Accession number', study.accession_number ?? '—'],
    ['Modality', study.modalities.length > 0 ? study.modalities.join(', ') : '—'],
  ];
  const left = doc.page.margins.left;
  const width = A4.width - left - doc.page.margins.right;
  const column = width / 2;
  for (let n = 0; n < rows.length; n += 2) {
    const y = doc.y;
    for (let c = 0; c < 2 && n + c < rows.length; c++) {
      const [label, value] = rows[n + c];
      doc
        .font(layout.font.bold)
        .fontSize(layout.size)
        .text(`${label}: `, left + c * column, y, { continued: true, width: column - 6 });
      doc.font(layout.font.regular).text(printable(value));
    }
    doc.y = Math.max(doc.y, y + layout.size + 4);
  }
  doc.x = left;
  doc.moveDown(1);
}

function drawPart(doc: PDFKit.PDFDocument, layout: ResolvedLayout, part: ReportPart, index: number, warn: RenderWarn): void {
  const left = doc.page.margins.left;
  const width = A4.width - left - doc.page.margins.right;
  if (part.kind === 'addendum') {
    doc.moveDown(1);
    const title = part.signed ? `Addendum ${index} — signed ${formatDateTime(part.signed.at)}` : `Addendum ${index} — draft`;
    doc
      .font(layout.font.bold)
      .fontSize(layout.headingSize + 1)
      .text(title, left, doc.y, { width });
    doc.moveDown(0.5);
  }
  for (const name of SECTION_NAMES) {
    const body = part[name];
    if (!body || body.trim() === '') continue;
    doc.font(layout.font.bold).fontSize(layout.headingSize).text(SECTION_TITLES[name], left, doc.y, { width });
    doc.moveDown(0.2);
    doc.font(layout.font.regular).fontSize(layout.size);
    doc.text(breakLongRuns(doc, printable(body), width), left, doc.y, { width, align: 'justify' });
    doc.moveDown(0.8);
  }
  if (part.signed) drawSignature(doc, layout, part.signed, warn);
}

function drawSignature(doc: PDFKit.PDFDocument, layout: ResolvedLayout, signed: ReportSignature, warn: RenderWarn): void {
  const slot = layout.signature;
  const image = slot.visible ? openImage(doc, signed.image, 'signature', warn) : null;
  const blockHeight = (image ? 60 : 0) + layout.size * 4 + 20;
  if (doc.y + blockHeight > A4.height - doc.page.margins.bottom) doc.addPage();
  const m = doc.page.margins;
  const left =
    slot.align === 'left' ? m.left : slot.align === 'right' ? A4.width - m.right - slot.width : (A4.width - slot.width) / 2;
  doc.moveDown(1);
  if (image) {
    drawImage(doc, image, 'signature', left, doc.y, { fit: [slot.width, 60], align: 'center' }, warn);
    doc.y += 62;
  }
  doc
    .moveTo(left, doc.y)
    .lineTo(left + slot.width, doc.y)
    .lineWidth(0.5)
    .strokeColor('#555555')
    .stroke();
  doc.y += 4;
  doc
    .font(layout.font.bold)
    .fontSize(layout.size)
    .text(printable(signed.name), left, doc.y, { width: slot.width, align: 'center' });
  doc.font(layout.font.regular);
  if (signed.crm) doc.text(printable(`CRM ${signed.crm}`), left, doc.y, { width: slot.width, align: 'center' });
  doc
    .fontSize(layout.size - 1)
    .text(`Signed ${formatDateTime(signed.at)}`, left, doc.y, { width: slot.width, align: 'center' });
  doc.fontSize(layout.size);
  doc.x = m.left;
}

/** Footer text, page numbers and, on a draft, DRAFT across every page (drawn last, over the text). */
function drawFooters(doc: PDFKit.PDFDocument, layout: ResolvedLayout, draft: boolean): void {
  const range = doc.bufferedPageRange();
  const m = layout.margins;
  const width = A4.width - m.left - m.right;
  for (let n = range.start; n < range.start + range.count; n++) {
    doc.switchToPage(n);
    // Writing below the bottom margin would make pdfkit add a page.
    const bottom = doc.page.margins.bottom;
    doc.page.margins.bottom = 0;
    const y = A4.height - m.bottom - layout.footer.height + 8;
    doc
      .font(layout.font.regular)
      .fontSize(layout.size - 2)
      .fillColor('#555555');
    if (layout.footer.text) doc.text(printable(layout.footer.text), m.left, y, { width, align: 'center', lineBreak: false });
    doc.text(`Page ${n - range.start + 1} of ${range.count}`, m.left, y + layout.size + 2, {
      width,
      align: 'right',
      lineBreak: false,
    });
    if (draft) {
      doc.save();
      doc.rotate(-35, { origin: [A4.width / 2, A4.height / 2] });
      doc.font(layout.font.bold).fontSize(110).fillColor('#cc0000').opacity(0.18);
      doc.text('DRAFT', 0, A4.height / 2 - 55, { width: A4.width, align: 'center', lineBreak: false });
      doc.restore();
      doc.font(layout.font.bold).fontSize(layout.size).fillColor('#cc0000').opacity(1);
      doc.text('DRAFT', m.left, m.top - 14 > 0 ? m.top - 14 : 2, { width, align: 'center', lineBreak: false });
    }
    doc.page.margins.bottom = bottom;
  }
}
