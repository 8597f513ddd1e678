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

describe('npm run lint (eslint.config.mjs)', () => {
  jest.setTimeout(180_000);

  it('fails on a controller that imports typeorm', () => {
    const findings = lintAs('typeorm-in-controller.ts', 'src/studies/lint-fixture.controller.ts');
    expect(findings).toEqual([
      expect.objectContaining({
        ruleId: 'no-restricted-imports',
        line: 3,
        message: expect.stringContaining('@nestjs/typeorm'),
      }),
      expect.objectContaining({ ruleId: 'no-restricted-imports', line: 4, message: expect.stringContaining("'typeorm'") }),
    ]);
  });

  it("fails on another feature's internals, the root module and axios outside imgsrv; a feature's index passes", () => {
    const findings = lintAs('feature-internals.ts', 'src/viewer/lint-fixture.ts');
    expect(findings.map(({ ruleId, line }) => [ruleId, line])).toEqual([
      ['no-restricted-imports', 3],
      ['import/no-restricted-paths', 4],
      ['import/no-restricted-paths', 5],
    ]);
    expect(findings[1].message).toContain('Only the entry points import the root module');
    expect(findings[2].message).toContain('Import studies through its public surface');
  });

  it('fails on shared code importing a feature', () => {
    const findings = lintAs('common-imports-feature.ts', 'src/common/lint-fixture.ts');
    expect(findings).toEqual([
      expect.objectContaining({
        ruleId: 'import/no-restricted-paths',
        line: 2,
        message: expect.stringContaining('imports no feature'),
      }),
    ]);
  });

  it('fails on a promise nobody awaits, and accepts one dropped with void (type-aware)', () => {
    const findings = lintAs('floating-promise.ts', 'test/lint/lint-gate.spec.ts', true);
    expect(findings).toEqual([expect.objectContaining({ ruleId: '@typescript-eslint/no-floating-promises', line: 6 })]);
  });
});
