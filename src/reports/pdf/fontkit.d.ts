/**
 * The part of fontkit the report renderer uses. fontkit is pdfkit's font engine and ships no
 * types; pdfkit takes a font it parsed wherever it takes font bytes.
 */
declare module 'fontkit' {
  export interface Font {
    readonly postscriptName: string;
  }
  export function create(buffer: Buffer | Uint8Array, postscriptName?: string): Font;
}
