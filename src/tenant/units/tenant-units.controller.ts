import { Controller, Get, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags, ApiUnprocessableEntityResponse } from '@nestjs/swagger';
import { TenantFilterQueryDto } from '../../common/list-queries';
import { ValidationErrorDto } from '../../common/responses';
import { UnitDto, UnitPageDto, UnitsService } from '../../clinics';
import { DataScope } from '../../common/auth/data-scope';
import { Auth, CallerScope } from '../../common/auth/decorators';
import { Paginated } from '../../common/pagination';

@ApiTags('tenant')
@Controller('tenant/units')
export class TenantUnitsController {
  constructor(private readonly units: UnitsService) {}

  @Get()
  @Auth()
  @ApiOperation({
    summary: 'Units of the caller’s clinic (50 per page, by name); search matches name and slug',
    description: 'tenant_id narrows the list; it only widens nothing: a super admin sees every clinic, others their own.',
  })
  @ApiOkResponse({ type: UnitPageDto })
  @ApiUnprocessableEntityResponse({ type: ValidationErrorDto })
  list(@CallerScope() scope: DataScope, @Query() query: TenantFilterQueryDto): Promise<Paginated<UnitDto>> {
    return this.units.list(scope, query);
  }
}
