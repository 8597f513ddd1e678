import { Controller, Get, Query, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProduces, ApiTags, ApiUnprocessableEntityResponse } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { DataScope } from '../common/auth/data-scope';
import { Auth, CallerScope } from '../common/auth/decorators';
import { AccessTrailService } from './access-trail.service';
import { AccessTrailPageDto, AccessTrailQueryDto } from './dto/access-trail.dto';

@ApiTags('audit')
@Controller('audit')
export class AccessTrailController {
  constructor(private readonly trail: AccessTrailService) {}

  @Get('access')
  @Auth('tenant_admin')
  @ApiOperation({
    summary: 'The access trail: who searched, opened, wrote or shared which study, newest first, 50 per page',
    description:
      'A tenant admin reads their clinic; a super admin every clinic (`tenant_id` to filter). `?format=csv` ' +
      'answers the whole filtered set as text/csv (the same columns; `user` as user_id and user_name).',
  })
  @ApiProduces('application/json', 'text/csv')
  @ApiOkResponse({ type: AccessTrailPageDto })
  @ApiUnprocessableEntityResponse({
    description: 'An invalid page, study_id, user_id, tenant_id, action, from, to (ISO 8601) or format',
  })
  async list(
    @CallerScope() scope: DataScope,
    @Query() query: AccessTrailQueryDto,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<AccessTrailPageDto | ReturnType<AccessTrailService['csv']>> {
    if (query.format !== 'csv') return this.trail.page(scope, query);
    reply
      .header('content-type', 'text/csv; charset=utf-8')
      .header('content-disposition', 'attachment; filename="access-trail.csv"')
      .header('cache-control', 'no-store');
    return this.trail.csv(scope, query);
  }
}
