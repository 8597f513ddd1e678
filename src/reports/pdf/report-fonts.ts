import { create, Font } from 'fontkit';
import { readFileSync } from 'fs';

/**
 * The report's fonts: DejaVu (npm `dejavu-fonts-ttf`, Bitstream Vera licence, no install script),
 * TrueType files embedded by pdfkit and subset to the glyphs a document uses. The 14 standard PDF
 * fonts only encode Windows-1252: pdfkit writes anything else (≥ ≤ µ β −, a combining tilde) as
 * bytes those fonts misread, garbling the character and sometimes the text after it. DejaVu covers
 * Latin, Greek, Cyrillic and the mathematical signs reports use.
 *
 * The files come from node_modules (installed by `npm ci`, copied into the Docker image), never
 * from the system's font folders, so every machine prints the same glyphs.
 */
export interface ReportFont {
  regular: string;
  bold: string;
}

/** A template's `layout.typography.font` (helvetica, times, courier: the names templates use) to DejaVu. */
export const REPORT_FONTS: Record<string, ReportFont> = {
  helvetica: { regular: 'DejaVuSans', bold: 'DejaVuSans-Bold' },
  times: { regular: 'DejaVuSerif', bold: 'DejaVuSerif-Bold' },
  courier: { regular: 'DejaVuSansMono', bold: 'DejaVuSansMono-Bold' },
};
export const DEFAULT_REPORT_FONT = REPORT_FONTS.helvetica;

const parsed = new Map<string, Font>();

/**
 * A font of REPORT_FONTS, read and parsed on first use and kept for every later document of the
 * render thread. Given the bytes, pdfkit would parse the font again for each document: 60 ms of a
 * one-page render instead of 15 (the parse, and the glyphs and tables fontkit reads lazily and
 * keeps on the font). A render thread lays out one document at a time, so sharing it is safe.
 */
export function reportFont(name: string): Font {
  let font = parsed.get(name);
  if (!font) {
    if (!Object.values(REPORT_FONTS).some((family) => family.regular === name || family.bold === name)) {
      throw new Error(`unknown report font ${name}`);
    }
    font = create(readFileSync(require.resolve(`dejavu-fonts-ttf/ttf/${name}.ttf`)));
    parsed.set(name, font);
  }
  return font;
}
