import { Body, Controller, Get, Post, Query } from '@nestjs/common';
import {
  ApiBody,
  ApiCreatedResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
  ApiUnprocessableEntityResponse,
} from '@nestjs/swagger';
import { DataScope } from '../../common/auth/data-scope';
import { Auth, CallerScope } from '../../common/auth/decorators';
import { Paginated } from '../../common/pagination';
import { TenantFilterQueryDto } from '../../common/list-queries';
import { NotFoundDto, ValidationErrorDto } from '../../common/responses';
import { CreateUnitDto, UnitDto, UnitPageDto, UnitsService } from '../../clinics';

@ApiTags('admin')
@Auth('super_admin')
@Controller('admin/units')
export class AdminUnitsController {
  constructor(private readonly units: UnitsService) {}

  @Get()
  @ApiOperation({ summary: 'List units of every clinic (50 per page, by name); search matches name and slug' })
  @ApiOkResponse({ type: UnitPageDto })
  @ApiUnprocessableEntityResponse({ type: ValidationErrorDto })
  list(@CallerScope() scope: DataScope, @Query() query: TenantFilterQueryDto): Promise<Paginated<UnitDto>> {
    return this.units.list(scope, query);
  }

  @Post()
  @ApiOperation({ summary: 'Create a unit in a clinic; it takes the clinic’s active state' })
  @ApiBody({ type: CreateUnitDto })
  @ApiCreatedResponse({ type: UnitDto })
  @ApiNotFoundResponse({ type: NotFoundDto, description: '`{message: "Tenant not found."}`' })
  @ApiUnprocessableEntityResponse({
    type: ValidationErrorDto,
    description: 'Validation failure, `A unit with that name already exists for this clinic.`, or a slug already taken',
  })
  create(@Body() body: CreateUnitDto): Promise<UnitDto> {
    return this.units.create(body);
  }
}
