import { DataSource } from 'typeorm';
import { loadConfig } from './src/config/environment';
import { dataSourceOptions } from './src/database/data-source-options';

/** The data source the TypeORM CLI uses (migration:generate, migration:revert). */
export default new DataSource(dataSourceOptions(loadConfig().DATABASE_URL));
