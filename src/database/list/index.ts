export * from './list-query';
export * from './list-search';
export * from './list-totals';
export * from './list.module';
export * from './prepared-queries';
export * from './sql-params';
