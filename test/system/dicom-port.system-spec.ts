/**
 * The image server's DICOM port takes images (C-STORE, through the study's door) and answers
 * C-ECHO; it answers no query and no retrieve. Orthanc holds every clinic's studies in one archive:
 * a device that could C-FIND, C-GET or C-MOVE there would list and fetch other clinics' studies,
 * which must behave as if they did not exist (interface.md, general rule 3).
 */
import { execFile } from 'child_process';
import { promises as fs } from 'fs';
import * as os from 'os';
import * as path from 'path';
import { writeStudy, WrittenStudy } from '../../scripts/stack/dicom';
import { OrthancInstance, startOrthanc, storeOverRest } from '../../scripts/stack/orthanc';

jest.setTimeout(60_000);

/** How Orthanc refuses a request its configuration does not allow: it aborts the association. */
const REFUSED = 'Peer aborted Association';

interface Run {
  code: number;
  output: string;
}

function dcmtk(command: string, args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(command, args, { timeout: 30_000 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      resolve({ code, output: `${stdout}${stderr}` });
    });
  });
}

describe("the image server's DICOM port answers no query and no retrieve", () => {
  let workDir: string;
  let orthanc: OrthancInstance;
  let study: WrittenStudy;

  beforeAll(async () => {
    workDir = await fs.mkdtemp(path.join(os.tmpdir(), 'pacs-dicom-port-'));
    orthanc = await startOrthanc();
    study = await writeStudy(path.join(workDir, 'study'), {
      patientId: 'PORT-PATIENT',
      patientName: 'PORT^PATIENT',
      studyDate: '20240115',
      series: [{ modality: 'CT', seriesNumber: 1, instances: 2, rows: 16, columns: 16 }],
    });
    // Stored as the service stores: the archive holds a study a device could ask for.
    await storeOverRest(orthanc, study.files);
  });

  afterAll(async () => {
    await orthanc?.destroy();
    if (workDir) await fs.rm(workDir, { recursive: true, force: true });
  });

  const target = () => ['-aec', orthanc.aet, '127.0.0.1', String(orthanc.dicomPort)];
  const studyKeys = () => [
    '-k',
    'QueryRetrieveLevel=STUDY',
    '-k',
    `StudyInstanceUID=${study.studyInstanceUid}`,
    '-k',
    'PatientID',
  ];

  it('answers C-ECHO (devices test their connection with it)', async () => {
    const echo = await dcmtk('echoscu', ['-aet', 'ANY_DEVICE', ...target()]);
    expect(echo).toMatchObject({ code: 0 });
  });

  it('lists nothing to a C-FIND, at the study and at the patient root', async () => {
    for (const root of ['-S', '-P']) {
      const find = await dcmtk('findscu', ['-v', '-aet', 'ANY_DEVICE', root, ...studyKeys(), ...target()]);
      expect(find.output).not.toContain('PORT-PATIENT');
      expect(find.output).not.toMatch(/Find Response: \d+ \(Pending\)/);
      expect(find.output).toContain(REFUSED);
    }
  });

  it('gives nothing to a C-GET, and moves nothing for a C-MOVE', async () => {
    const into = path.join(workDir, 'retrieved');
    await fs.mkdir(into, { recursive: true });
    const get = await dcmtk('getscu', ['-v', '-aet', 'ANY_DEVICE', '-od', into, '-S', ...studyKeys(), ...target()]);
    expect(await fs.readdir(into)).toEqual([]);
    expect(get.output).not.toMatch(/Received C-STORE Request/i);
    expect(get.output).toContain(REFUSED);

    // Orthanc knows no destination to move to; the request itself is refused all the same, so
    // registering one for some other purpose opens nothing.
    const move = await dcmtk('movescu', ['-v', '-aet', 'ANY_DEVICE', '-aem', 'ANY_DEVICE', '-S', ...studyKeys(), ...target()]);
    expect(move.output).not.toMatch(/Move Response/);
    expect(move.output).toContain(REFUSED);
  });
});
