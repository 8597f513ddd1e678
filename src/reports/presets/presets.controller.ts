import { Body, Controller, Delete, Get, HttpCode, Patch, Post, Query } from '@nestjs/common';
import {
  ApiBody,
  ApiCreatedResponse,
  ApiNoContentResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
  ApiUnprocessableEntityResponse,
} from '@nestjs/swagger';
import { DataScope } from '../../common/auth/data-scope';
import { Auth, CallerScope } from '../../common/auth/decorators';
import { UuidParam } from '../../common/http/uuid-param';
import { Paginated } from '../../common/pagination';
import { NotFoundDto, ValidationErrorDto } from '../../common/responses';
import { CreatePresetDto, PresetDto, PresetListQueryDto, PresetPageDto, UpdatePresetDto } from './presets.dto';
import { PresetsService } from './presets.service';

const PRESET_NOT_FOUND = 'Missing, deleted or outside the caller’s clinic: `{message: "Preset not found."}`';

@ApiTags('tenant')
@Controller('tenant/report-presets')
export class PresetsController {
  constructor(private readonly presets: PresetsService) {}

  @Get()
  @Auth()
  @ApiOperation({
    summary: 'Report presets (50 per page, by name)',
    description:
      'A regular user: the presets of their unit and of the whole clinic; a tenant admin: the clinic’s (unit_id: that ' +
      'unit’s and the whole clinic’s). `modality` keeps the presets of that modality and those of any modality.',
  })
  @ApiOkResponse({ type: PresetPageDto })
  @ApiUnprocessableEntityResponse({ type: ValidationErrorDto })
  list(@CallerScope() scope: DataScope, @Query() query: PresetListQueryDto): Promise<Paginated<PresetDto>> {
    return this.presets.list(scope, query);
  }

  @Get(':id')
  @Auth()
  @ApiOperation({ summary: 'One report preset (same visibility as the list)' })
  @ApiOkResponse({ type: PresetDto })
  @ApiNotFoundResponse({ type: NotFoundDto, description: PRESET_NOT_FOUND })
  get(@CallerScope() scope: DataScope, @UuidParam('id', 'Preset') id: string): Promise<PresetDto> {
    return this.presets.get(scope, id);
  }

  @Post()
  @Auth('tenant_admin')
  @ApiOperation({ summary: 'Create a report preset for the clinic or one of its units' })
  @ApiBody({ type: CreatePresetDto })
  @ApiCreatedResponse({ type: PresetDto })
  @ApiUnprocessableEntityResponse({
    type: ValidationErrorDto,
    description: 'Validation; errors.unit_id when not a unit of the clinic',
  })
  create(@CallerScope() scope: DataScope, @Body() body: CreatePresetDto): Promise<PresetDto> {
    return this.presets.create(scope, body);
  }

  @Patch(':id')
  @Auth('tenant_admin')
  @ApiOperation({ summary: 'Change a report preset; every field optional' })
  @ApiBody({ type: UpdatePresetDto })
  @ApiOkResponse({ type: PresetDto })
  @ApiNotFoundResponse({ type: NotFoundDto, description: PRESET_NOT_FOUND })
  @ApiUnprocessableEntityResponse({ type: ValidationErrorDto })
  update(
    @CallerScope() scope: DataScope,
    @UuidParam('id', 'Preset') id: string,
    @Body() body: UpdatePresetDto,
  ): Promise<PresetDto> {
    return this.presets.update(scope, id, body);
  }

  @Delete(':id')
  @HttpCode(204)
  @Auth('tenant_admin')
  @ApiOperation({ summary: 'Soft-delete a report preset (kept in the table, gone from every read)' })
  @ApiNoContentResponse({ description: 'Deleted; no body' })
  @ApiNotFoundResponse({ type: NotFoundDto, description: PRESET_NOT_FOUND })
  async remove(@CallerScope() scope: DataScope, @UuidParam('id', 'Preset') id: string): Promise<void> {
    await this.presets.remove(scope, id);
  }
}
