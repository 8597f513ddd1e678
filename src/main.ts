import './config/v8-flags';
import './config/async-resource-bind';
import { createApiApp } from './app.factory';
import { ConfigError, loadConfig } from './config/environment';

async function bootstrap(): Promise<void> {
  const config = loadConfig();
  const app = await createApiApp(config);
  await app.listen(config.PORT, config.HOST);
}

bootstrap().catch((error) => {
  console.error(error instanceof ConfigError ? error.message : error);
  process.exit(1);
});
