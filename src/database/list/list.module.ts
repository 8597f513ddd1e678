import { Module } from '@nestjs/common';
import { ListSearch } from './list-search';
import { ListTotals } from './list-totals';
import { PreparedQueries } from './prepared-queries';

/** The shared list machinery: kept counts, the prepared list statements and the searched pages. */
@Module({
  providers: [ListTotals, PreparedQueries, ListSearch],
  exports: [ListTotals, PreparedQueries, ListSearch],
})
export class ListModule {}
