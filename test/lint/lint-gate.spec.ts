import { execFileSync } from 'child_process';
import * as path from 'path';

/**
 * The lint gate bites: each fixture is linted with the project's own eslint.config.mjs as if it
 * were a file under src/ (ESLint's Node API on the fixture's text, in a child process: ESLint loads
 * its configuration through dynamic import(), which Jest's module runtime does not provide).
 */
const root = path.resolve(__dirname, '../..');

interface Finding {
  ruleId: string | null;
  message: string;
  line: number;
}

function lintAs(fixture: string, pretendPath: string, typeAware = false): Finding[] {
  const script = `
    const { ESLint } = require('eslint');
    const fs = require('fs');
    (async () => {
      const eslint = new ESLint({
        cwd: ${JSON.stringify(root)},
        // Type information needs the file in the TypeScript project; only the fixture that
        // checks floating promises is linted at a real path inside it (see below).
        overrideConfig: ${typeAware} ? [] : [require('typescript-eslint').configs.disableTypeChecked],
      });
      const [result] = await eslint.lintText(fs.readFileSync(process.argv[1], 'utf8'), { filePath: process.argv[2] });
      process.stdout.write(JSON.stringify(result.messages));
    })().catch((error) => { console.error(error); process.exit(1); });
  `;
  const output = execFileSync(
    process.execPath,
    ['-e', script, path.join(__dirname, 'fixtures', fixture), path.join(root, pretendPath)],
    { cwd: root, encoding: 'utf8', timeout: 120_000 },
  );
  return (JSON.parse(output) as Finding[]).map(({ ruleId, message, line }) => ({ ruleId, message, line }));
}

/** A finding the gate must report: its rule, its line and, where it matters, part of its message. */
type Expected = [ruleId: string, line: number, message?: string];

const CASES: Array<{ name: string; fixture: string; as: string; typeAware?: boolean; findings: Expected[] }> = [
  {
    name: 'fails on a controller that imports typeorm',
    fixture: 'typeorm-in-controller.ts',
    as: 'src/studies/lint-fixture.controller.ts',
    findings: [
      ['no-restricted-imports', 3, '@nestjs/typeorm'],
      ['no-restricted-imports', 4, "'typeorm'"],
    ],
  },
  {
    name: "fails on another feature's internals, the root module and axios outside imgsrv; a feature's index passes",
    fixture: 'feature-internals.ts',
    as: 'src/viewer/lint-fixture.ts',
    findings: [
      ['no-restricted-imports', 3],
      ['import/no-restricted-paths', 4, 'Only the entry points import the root module'],
      ['import/no-restricted-paths', 5, 'Import studies through its public surface'],
    ],
  },
  {
    name: 'fails on shared code importing a feature',
    fixture: 'common-imports-feature.ts',
    as: 'src/common/lint-fixture.ts',
    findings: [['import/no-restricted-paths', 2, 'imports no feature']],
  },
  {
    // Type information needs the file in the TypeScript project: linted at a real path inside it.
    name: 'fails on a promise nobody awaits, and accepts one dropped with void (type-aware)',
    fixture: 'floating-promise.ts',
    as: 'test/lint/lint-gate.spec.ts',
    typeAware: true,
    findings: [['@typescript-eslint/no-floating-promises', 6]],
  },
];

describe('npm run lint (eslint.config.mjs)', () => {
  jest.setTimeout(180_000);

  it.each(CASES)('$name', ({ fixture, as, typeAware, findings }) => {
    expect(lintAs(fixture, as, typeAware)).toEqual(
      findings.map(([ruleId, line, message]) =>
        expect.objectContaining({ ruleId, line, ...(message ? { message: expect.stringContaining(message) } : {}) }),
      ),
    );
  });
});
