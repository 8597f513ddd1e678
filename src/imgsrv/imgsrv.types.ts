/**
 * The parts of Orthanc's (1.10+) REST answers that ingestion reads. Orthanc sends every DICOM value
 * as a string in `MainDicomTags`; absent tags are simply missing.
 */

export interface OrthancStudy {
  ID: string;
  IsStable?: boolean;
  /** Orthanc's local time of the last change, e.g. "20240115T120000". */
  LastUpdate?: string;
  MainDicomTags: {
    StudyInstanceUID?: string;
    StudyDate?: string;
    AccessionNumber?: string;
    StudyDescription?: string;
    [tag: string]: string | undefined;
  };
  PatientMainDicomTags: {
    PatientID?: string;
    PatientName?: string;
    PatientBirthDate?: string;
    PatientSex?: string;
    [tag: string]: string | undefined;
  };
  Series: string[];
}

export interface OrthancSeries {
  ID: string;
  Instances: string[];
  ParentStudy?: string;
  MainDicomTags: {
    Modality?: string;
    SeriesInstanceUID?: string;
    SeriesNumber?: string;
    Manufacturer?: string;
    [tag: string]: string | undefined;
  };
}

export interface OrthancInstance {
  ID: string;
  ParentSeries: string;
  IndexInSeries?: number | null;
  FileSize?: number;
  MainDicomTags: {
    SOPInstanceUID?: string;
    InstanceNumber?: string;
    [tag: string]: string | undefined;
  };
}

/** `GET /instances/{id}/metadata?expand`: where the instance came from. */
export interface OrthancInstanceMetadata {
  RemoteAET?: string;
  RemoteIP?: string;
  CalledAET?: string;
  Origin?: string;
  [name: string]: string | undefined;
}

export interface OrthancChange {
  ChangeType: string;
  ID: string;
  ResourceType: string;
  Seq: number;
  Date?: string;
}

export interface OrthancChanges {
  Changes: OrthancChange[];
  Done: boolean;
  Last: number;
}

/** A DICOM JSON dataset (PS3.18 F.2) as answered by QIDO-RS. */
export type DicomJsonDataset = Record<string, { vr?: string; Value?: unknown[] } | undefined>;

/** Rows, Columns and SliceThickness of one instance (null when the instance has no pixel data). */
export interface ImageGeometry {
  rows: number | null;
  columns: number | null;
  sliceThickness: number | null;
}
