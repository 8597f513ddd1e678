import { Command, CommanderError } from 'commander';
import { ConfigError, loadConfig } from './config/environment';
import { createSuperAdminCommand } from './cli/create-super-admin';

/** `npm run cli -- <command>`: operator commands; each command's runner lives in src/cli/. */
async function main(argv: string[]): Promise<void> {
  const program = new Command('cli').exitOverride();
  program
    .command('create-super-admin')
    .description('Create the first super admin; prints the new user id')
    .requiredOption('--email <email>')
    .requiredOption('--password <password>', 'at least 8 characters')
    .requiredOption('--name <name>')
    .action(async (options: { email: string; password: string; name: string }) => {
      const id = await createSuperAdminCommand(loadConfig(), options);
      process.stdout.write(`${id}\n`);
    });
  program
    .command('import')
    .description('Queue every study the image server already holds for indexing (safe to run again)')
    .option('--since <date>', 'only studies dated on or after this day (YYYY-MM-DD)')
    .action(async (options: { since?: string }) => {
      loadConfig();
      // Loaded on demand: the other commands need no Nest application.
      const { importArchive } = await import('./cli/archive-import');
      process.stdout.write(`${await importArchive(options)}\n`);
    });
  await program.parseAsync(argv);
}

main(process.argv).then(
  () => process.exit(0),
  (error) => {
    if (error instanceof CommanderError) process.exit(error.exitCode || 1);
    console.error(error instanceof ConfigError || error?.userFacing ? error.message : error);
    process.exit(1);
  },
);
