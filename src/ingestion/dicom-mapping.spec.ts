import {
  dicomDate,
  dicomDecimal,
  dicomInt,
  dicomSex,
  geometryFromQido,
  geometryFromSimplifiedTags,
  localDate,
  mapInstance,
  mapSeries,
  mapStudy,
  validUid,
  normaliseAet,
} from './dicom-mapping';
import { parseSince } from './archive-import.service';

describe('DICOM field mapping', () => {
  it('maps YYYYMMDD dates to YYYY-MM-DD and refuses impossible ones', () => {
    expect(dicomDate('20240115')).toBe('2024-01-15');
    expect(dicomDate(' 19800214 ')).toBe('1980-02-14');
    expect(dicomDate('2024.01.15')).toBe('2024-01-15');
    expect(dicomDate('20240229')).toBe('2024-02-29');
    for (const bad of [
      '20230229',
      '20241301',
      '20240100',
      '20240132',
      '2024011',
      '202401150',
      'abcdefgh',
      '',
      undefined,
      null,
      '00000000',
    ]) {
      expect(dicomDate(bad)).toBeNull();
    }
  });

  it('keeps only M and F as sex', () => {
    expect(dicomSex('M')).toBe('M');
    expect(dicomSex(' f ')).toBe('F');
    for (const other of ['O', 'U', '', ' ', 'MALE', undefined, null]) expect(dicomSex(other)).toBeNull();
  });

  it('normalises AE titles as modalities are registered', () => {
    expect(normaliseAet('  ct_room_1 ')).toBe('CT_ROOM_1');
    expect(normaliseAet('   ')).toBeNull();
    expect(normaliseAet(undefined)).toBeNull();
  });

  it('reads integers and decimals leniently', () => {
    expect(dicomInt(' 12 ', 0)).toBe(12);
    expect(dicomInt('', 7)).toBe(7);
    expect(dicomInt('x', 7)).toBe(7);
    expect(dicomInt('99999999999', 7)).toBe(7);
    expect(dicomDecimal('1.25')).toBe(1.25);
    expect(dicomDecimal('2.5\\3')).toBe(2.5);
    expect(dicomDecimal(5)).toBe(5);
    expect(dicomDecimal('abc')).toBeNull();
    expect(dicomDecimal(undefined)).toBeNull();
  });

  it('maps a study, falling back to the ingestion date when the study date is missing or invalid', () => {
    const now = new Date(2025, 5, 30, 12);
    const base = {
      ID: 'abc',
      Series: [],
      MainDicomTags: {
        StudyInstanceUID: '1.2.3',
        StudyDate: '20240115',
        AccessionNumber: ' ACC1 ',
        StudyDescription: 'CT head',
      },
      PatientMainDicomTags: { PatientID: 'P1', PatientName: 'DOE^JANE', PatientBirthDate: '19800214', PatientSex: 'F' },
    };
    expect(mapStudy(base, now)).toEqual({
      imgsrv_study_id: 'abc',
      study_instance_uid: '1.2.3',
      patient_id: 'P1',
      patient_name: 'DOE^JANE',
      patient_birth_date: '1980-02-14',
      patient_sex: 'F',
      accession_number: 'ACC1',
      study_date: '2024-01-15',
      study_description: 'CT head',
    });
    const sparse = mapStudy({ ID: 'x', Series: [], MainDicomTags: { StudyDate: '20241399' }, PatientMainDicomTags: {} }, now);
    expect(sparse).toMatchObject({
      study_date: '2025-06-30',
      patient_id: '',
      patient_name: '',
      patient_birth_date: null,
      patient_sex: null,
      accession_number: null,
      study_description: null,
    });
    expect(localDate(now)).toBe('2025-06-30');
  });

  it('cuts values longer than their column instead of failing the study, but never a UID', () => {
    const longUid = `1.2.${'3'.repeat(76)}`;
    const study = mapStudy({
      ID: 'x',
      Series: [],
      MainDicomTags: { StudyDescription: 'd'.repeat(400), StudyInstanceUID: `${longUid}\0` },
      PatientMainDicomTags: { PatientName: 'n'.repeat(300) },
    });
    expect(study.study_description).toHaveLength(255);
    expect(study.patient_name).toHaveLength(255);
    expect(study.study_instance_uid).toBe(longUid);
    expect(validUid(study.study_instance_uid)).toBe(false);
    expect(validUid(longUid.slice(0, 64))).toBe(true);
    const series = mapSeries({
      ID: 's',
      ParentStudy: 'x',
      Instances: [],
      MainDicomTags: { SeriesInstanceUID: longUid },
    } as never);
    expect(series.series_instance_uid).toBe(longUid);
  });

  it('maps series and instances with defaults for missing numbers', () => {
    expect(
      mapSeries({
        ID: 's',
        Instances: [],
        MainDicomTags: { Modality: 'ct', SeriesNumber: '3', SeriesInstanceUID: '1.2', Manufacturer: '' },
      }),
    ).toEqual({ imgsrv_series_id: 's', series_instance_uid: '1.2', modality: 'CT', series_number: 3, manufacturer: null });
    expect(mapSeries({ ID: 's', Instances: [], MainDicomTags: {} })).toMatchObject({ modality: 'OT', series_number: 0 });
    expect(
      mapInstance({ ID: 'i', ParentSeries: 's', IndexInSeries: 4, MainDicomTags: { SOPInstanceUID: '9', InstanceNumber: '' } }),
    ).toEqual({
      imgsrv_instance_id: 'i',
      imgsrv_series_id: 's',
      sop_instance_uid: '9',
      instance_number: 4,
      index_in_series: 4,
    });
  });

  it('reads Rows, Columns and SliceThickness from QIDO-RS and from simplified tags', () => {
    const qido = geometryFromQido([
      {
        '00080018': { vr: 'UI', Value: ['1.1'] },
        '00280010': { vr: 'US', Value: [192] },
        '00280011': { vr: 'US', Value: [256] },
        '00180050': { vr: 'DS', Value: [1.25] },
      },
      { '00080018': { vr: 'UI', Value: ['1.2'] }, '00180050': { vr: 'DS', Value: ['5'] } },
      { '00280010': { vr: 'US', Value: [1] } },
    ]);
    expect([...qido.entries()]).toEqual([
      ['1.1', { rows: 192, columns: 256, sliceThickness: 1.25 }],
      ['1.2', { rows: null, columns: null, sliceThickness: 5 }],
    ]);
    expect(geometryFromSimplifiedTags({ Rows: '64', Columns: '32', SliceThickness: '2.5' })).toEqual({
      rows: 64,
      columns: 32,
      sliceThickness: 2.5,
    });
    expect(geometryFromSimplifiedTags(null)).toEqual({ rows: null, columns: null, sliceThickness: null });
  });
});

describe('import --since', () => {
  it('accepts a real YYYY-MM-DD date and refuses anything else with a clear message', () => {
    expect(parseSince(undefined)).toBeUndefined();
    expect(parseSince('2024-02-29')).toBe('2024-02-29');
    for (const bad of ['2023-02-29', '20240101', '2024-1-1', 'yesterday', '']) {
      expect(() => parseSince(bad)).toThrow(/--since must be a date written YYYY-MM-DD/);
    }
  });
});
