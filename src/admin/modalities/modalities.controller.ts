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
import { Auth } from '../../common/auth/decorators';
import { Paginated } from '../../common/pagination';
import { TenantUnitFilterQueryDto } from '../../common/list-queries';
import { NotFoundDto, ValidationErrorDto } from '../../common/responses';
import { CreateModalityDto, ModalityDto, ModalityPageDto } from './modalities.dto';
import { ModalitiesService } from './modalities.service';

@ApiTags('admin')
@Auth('super_admin')
@Controller('admin/modalities')
export class ModalitiesController {
  constructor(private readonly modalities: ModalitiesService) {}

  @Get()
  @ApiOperation({ summary: 'List DICOM devices (50 per page, by name); search matches name and aet' })
  @ApiOkResponse({ type: ModalityPageDto })
  @ApiUnprocessableEntityResponse({ type: ValidationErrorDto })
  list(@Query() query: TenantUnitFilterQueryDto): Promise<Paginated<ModalityDto>> {
    return this.modalities.list(query);
  }

  @Post()
  @ApiOperation({ summary: 'Register a DICOM device; studies it sends are filed under its clinic and unit' })
  @ApiBody({ type: CreateModalityDto })
  @ApiCreatedResponse({ type: ModalityDto })
  @ApiNotFoundResponse({
    type: NotFoundDto,
    description:
      '`{message: "Tenant not found."}`, or `{message: "Unit not found."}` when the unit is unknown or not in the clinic',
  })
  @ApiUnprocessableEntityResponse({
    type: ValidationErrorDto,
    description: 'Validation failure, a name already used in the unit, or an aet already in use',
  })
  create(@Body() body: CreateModalityDto): Promise<ModalityDto> {
    return this.modalities.create(body);
  }
}
