/**
 * What a report PDF is rendered from: plain data (it crosses to a worker thread), no database rows.
 * A signed report keeps its letterhead (what the template, the logo and the header were at signing)
 * in `reports.signed_layout`, so its PDF never changes when those change later.
 */
export interface ReportLetterhead {
  clinic_name: string;
  unit_name: string;
  /** The clinic's logo (settings), a data URL, or null. */
  logo: string | null;
  /** The template's layout and page documents (regions, slots, typography, margins); {} without a template. */
  layout: Record<string, unknown>;
  page: Record<string, unknown>;
  background: { data_url: string; opacity: number } | null;
  patient: { name: string; id: string; birth_date: string | null; sex: string | null };
  study: { date: string | null; description: string | null; accession_number: string | null; modalities: string[] };
}

export interface ReportSections {
  indication: string | null;
  technique: string | null;
  findings: string | null;
  impression: string | null;
}

export interface ReportSignature {
  name: string;
  crm: string | null;
  /** ISO 8601. */
  at: string;
  /** The signer's signature image, a data URL, or null. */
  image: string | null;
}

export interface ReportPart extends ReportSections {
  kind: 'report' | 'addendum';
  /** null: a draft. */
  signed: ReportSignature | null;
}

export interface ReportDocument {
  letterhead: ReportLetterhead;
  /** The report first, then its addenda in signing order (a draft addendum last). */
  parts: ReportPart[];
  /** Prints DRAFT on every page. */
  draft: boolean;
}

export const SECTION_NAMES = ['indication', 'technique', 'findings', 'impression'] as const;
export type SectionName = (typeof SECTION_NAMES)[number];
