import { Injectable } from '@nestjs/common';
import { Readable } from 'stream';
import { DataScope } from '../common/auth/data-scope';
import { Errors } from '../common/errors/api-errors';
import { pageOffset, paginated, Paginated } from '../common/pagination';
import { SeriesDto, StudyDetailDto, StudyDto, toSeriesDto, toStudyDetailDto, toStudyDto } from './dto/study.responses';
import { StudiesRepository, StudyFilter } from './studies.repository';

export const STUDIES_PER_PAGE = 15;

/** Clinical reads of studies, their series and instances, always through the caller's scope. */
@Injectable()
export class StudiesService {
  constructor(private readonly studies: StudiesRepository) {}

  async list(scope: DataScope, filter: StudyFilter, pageNumber?: number): Promise<Paginated<StudyDto>> {
    const { page, offset } = pageOffset(pageNumber, STUDIES_PER_PAGE);
    const { rows, total, exact } = await this.studies.listStudies(scope, filter, offset, STUDIES_PER_PAGE);
    return paginated(rows.map(toStudyDto), total, page, STUDIES_PER_PAGE, exact);
  }

  async detail(scope: DataScope, id: string): Promise<StudyDetailDto> {
    const study = await this.studies.findStudyDetail(scope, id);
    if (!study) throw Errors.notFound('Study');
    // The worker fills `modalities`; until it has, the series already say which they are.
    const modalities = study.modalities ?? (await this.studies.seriesModalities(study.id));
    return toStudyDetailDto(study, modalities);
  }

  async series(scope: DataScope, studyId: string): Promise<SeriesDto[]> {
    if (!(await this.studies.studyExists(scope, studyId))) throw Errors.notFound('Study');
    return (await this.studies.listSeries(studyId)).map(toSeriesDto);
  }

  /**
   * The instances of a series as a stream of the JSON text of InstanceDto[] (see
   * StudiesRepository.instancesJson), 404 when the series is not in the scope.
   */
  async instancesJson(scope: DataScope, seriesId: string): Promise<Readable> {
    const parts = await this.studies.instancesJson(scope, seriesId);
    if (parts === null) throw Errors.notFound('Series');
    return Readable.from(jsonArray(parts));
  }
}

/** `[`, the parts separated by commas, `]`: the parts are comma-joined JSON objects. */
function* jsonArray(parts: string[]): Generator<string> {
  yield '[';
  for (let n = 0; n < parts.length; n++) yield n === 0 ? parts[n] : `,${parts[n]}`;
  yield ']';
}
