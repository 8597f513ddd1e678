import { Controller, Get, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags, ApiUnprocessableEntityResponse } from '@nestjs/swagger';
import { TenantFilterQueryDto } from '../../admin/shared/list-queries';
import { ValidationErrorDto } from '../../admin/shared/responses';
import { UnitDto, UnitPageDto } from '../../admin/units/units.dto';
import { UnitsService } from '../../admin/units/units.service';
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
