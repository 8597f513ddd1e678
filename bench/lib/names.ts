/**
 * Word lists for the generated data, with weights so that the distribution looks like a Brazilian
 * clinic's: a few surnames (Silva, Santos, Oliveira...) are very common and most are rare, which is
 * what makes a name search either cheap (rare fragment) or expensive (common fragment).
 */
export type Weighted = ReadonlyArray<readonly [string, number]>;

export const FEMALE_FIRST: Weighted = [
  ['Maria', 30], ['Ana', 18], ['Francisca', 6], ['Antônia', 5], ['Adriana', 4], ['Juliana', 4],
  ['Márcia', 4], ['Fernanda', 4], ['Patrícia', 4], ['Aline', 4], ['Sandra', 3], ['Camila', 3],
  ['Amanda', 3], ['Bruna', 3], ['Jéssica', 3], ['Letícia', 3], ['Júlia', 3], ['Luciana', 3],
  ['Vanessa', 3], ['Mariana', 3], ['Gabriela', 3], ['Vera', 2], ['Vitória', 2], ['Larissa', 2],
  ['Cláudia', 2], ['Beatriz', 2], ['Rita', 2], ['Luana', 2], ['Sônia', 2], ['Renata', 2],
  ['Eliane', 2], ['Josefa', 2], ['Simone', 2], ['Natália', 2], ['Cristiane', 2], ['Carla', 2],
  ['Débora', 1], ['Rosângela', 1], ['Jaqueline', 1], ['Rosa', 1], ['Daniela', 1], ['Aparecida', 1],
  ['Marlene', 1], ['Terezinha', 1], ['Raimunda', 1], ['Andréa', 1], ['Fabiana', 1], ['Lúcia', 1],
  ['Raquel', 1], ['Ângela', 1], ['Rafaela', 1], ['Joana', 1], ['Luzia', 1], ['Elaine', 1],
  ['Daniele', 1], ['Regina', 1], ['Daiane', 1], ['Suelen', 1], ['Alessandra', 1], ['Isabela', 1],
  ['Helena', 1], ['Valentina', 1], ['Laura', 1], ['Alice', 1], ['Manuela', 1], ['Cecília', 1],
  ['Heloísa', 1], ['Lívia', 1], ['Yasmin', 1], ['Clara', 1], ['Sofia', 1], ['Lorena', 1],
];

export const MALE_FIRST: Weighted = [
  ['José', 25], ['João', 18], ['Antônio', 14], ['Francisco', 10], ['Carlos', 8], ['Paulo', 8],
  ['Pedro', 7], ['Lucas', 6], ['Luiz', 6], ['Marcos', 6], ['Luís', 5], ['Gabriel', 5], ['Rafael', 5],
  ['Daniel', 4], ['Marcelo', 4], ['Bruno', 4], ['Eduardo', 4], ['Felipe', 4], ['Raimundo', 4],
  ['Rodrigo', 4], ['Manoel', 3], ['Mateus', 3], ['André', 3], ['Fernando', 3], ['Fábio', 3],
  ['Leonardo', 3], ['Gustavo', 3], ['Guilherme', 3], ['Leandro', 3], ['Tiago', 3], ['Anderson', 2],
  ['Ricardo', 2], ['Márcio', 2], ['Jorge', 2], ['Sebastião', 2], ['Alexandre', 2], ['Roberto', 2],
  ['Edson', 2], ['Diego', 2], ['Vitor', 2], ['Sérgio', 2], ['Cláudio', 2], ['Matheus', 2],
  ['Thiago', 2], ['Geraldo', 2], ['Adriano', 1], ['Luciano', 1], ['Júlio', 1], ['Renato', 1],
  ['Alex', 1], ['Vinícius', 1], ['Rogério', 1], ['Samuel', 1], ['Ronaldo', 1], ['Mário', 1],
  ['Flávio', 1], ['Douglas', 1], ['Igor', 1], ['Davi', 1], ['Arthur', 1], ['Heitor', 1],
  ['Bernardo', 1], ['Miguel', 1], ['Enzo', 1], ['Benjamin', 1], ['Otávio', 1], ['Caio', 1],
];

export const FEMALE_MIDDLE: Weighted = [
  ['Aparecida', 6], ['de Fátima', 5], ['das Graças', 4], ['Eduarda', 2], ['Clara', 2], ['Luiza', 2],
  ['Cristina', 2], ['Helena', 2], ['de Lourdes', 2], ['do Carmo', 2], ['Vitória', 1], ['Beatriz', 1],
];

export const MALE_MIDDLE: Weighted = [
  ['Carlos', 4], ['Henrique', 4], ['Augusto', 3], ['Paulo', 3], ['Vitor', 2], ['Miguel', 2],
  ['Gabriel', 2], ['Fernando', 2], ['Roberto', 2], ['Alberto', 1], ['Eduardo', 2], ['Luiz', 2],
];

/** Roughly the frequency order of Brazilian surnames, with a long tail. */
export const SURNAMES: Weighted = [
  ['Silva', 60], ['Santos', 40], ['Oliveira', 28], ['Souza', 26], ['Rodrigues', 18], ['Ferreira', 18],
  ['Alves', 17], ['Pereira', 17], ['Lima', 16], ['Gomes', 15], ['Costa', 13], ['Ribeiro', 13],
  ['Martins', 12], ['Carvalho', 12], ['Almeida', 11], ['Lopes', 11], ['Soares', 10], ['Fernandes', 10],
  ['Vieira', 10], ['Barbosa', 9], ['Rocha', 9], ['Dias', 9], ['Nascimento', 8], ['Andrade', 8],
  ['Moreira', 8], ['Nunes', 7], ['Marques', 7], ['Machado', 7], ['Mendes', 7], ['Freitas', 6],
  ['Cardoso', 6], ['Ramos', 6], ['Gonçalves', 6], ['Santana', 5], ['Teixeira', 5], ['Araújo', 5],
  ['Melo', 5], ['Barros', 4], ['Cavalcanti', 4], ['Monteiro', 4], ['Moura', 4], ['Correia', 4],
  ['Pinto', 4], ['Campos', 4], ['Cunha', 3], ['Batista', 3], ['Rezende', 3], ['Castro', 3],
  ['Farias', 3], ['Reis', 3], ['Azevedo', 3], ['Borges', 3], ['Pires', 3], ['Miranda', 3],
  ['Fonseca', 2], ['Bezerra', 2], ['Tavares', 2], ['Duarte', 2], ['Sales', 2], ['Xavier', 2],
  ['Brito', 2], ['Coelho', 2], ['Medeiros', 2], ['Guimarães', 2], ['Macedo', 2], ['Queiroz', 2],
  ['Figueiredo', 1], ['Siqueira', 1], ['Peixoto', 1], ['Magalhães', 1], ['Vasconcelos', 1],
  ['Bittencourt', 1], ['Damasceno', 1], ['Albuquerque', 1], ['Brandão', 1], ['Aguiar', 1],
  ['Nogueira', 1], ['Sampaio', 1], ['Lacerda', 1], ['Pacheco', 1], ['Fagundes', 1], ['Bastos', 1],
  ['Prado', 1], ['Toledo', 1], ['Amaral', 1], ['Leite', 1], ['Falcão', 1], ['Godoy', 1], ['Paiva', 1],
  ['Quintanilha', 1], ['Wanderley', 1], ['Zanetti', 1], ['Kowalski', 1], ['Yamamoto', 1], ['Nakamura', 1],
];

/** Primary modality of a study and its weight; descriptions in Portuguese, as the clinics write them. */
export const MODALITIES: ReadonlyArray<{ code: string; weight: number; descriptions: string[]; manufacturer: string }> = [
  { code: 'CR', weight: 22, manufacturer: 'FUJIFILM', descriptions: ['RX TORAX PA E PERFIL', 'RX COLUNA LOMBAR', 'RX JOELHO DIREITO', 'RX MAO ESQUERDA', 'RX SEIOS DA FACE'] },
  { code: 'DX', weight: 12, manufacturer: 'Carestream', descriptions: ['RX TORAX PA', 'RX BACIA AP', 'RX PE DIREITO', 'RX OMBRO ESQUERDO'] },
  { code: 'CT', weight: 20, manufacturer: 'SIEMENS', descriptions: ['TC CRANIO SEM CONTRASTE', 'TC TORAX ALTA RESOLUCAO', 'TC ABDOME TOTAL', 'TC COLUNA CERVICAL', 'ANGIOTOMOGRAFIA CORONARIA'] },
  { code: 'MR', weight: 14, manufacturer: 'GE MEDICAL SYSTEMS', descriptions: ['RM CRANIO', 'RM JOELHO ESQUERDO', 'RM COLUNA LOMBOSSACRA', 'RM OMBRO DIREITO', 'RM PELVE'] },
  { code: 'US', weight: 16, manufacturer: 'Philips', descriptions: ['US ABDOME TOTAL', 'US OBSTETRICA', 'US TIREOIDE', 'US MAMAS', 'DOPPLER CAROTIDAS'] },
  { code: 'MG', weight: 10, manufacturer: 'HOLOGIC', descriptions: ['MAMOGRAFIA BILATERAL', 'MAMOGRAFIA DE RASTREAMENTO'] },
  { code: 'NM', weight: 2, manufacturer: 'SIEMENS', descriptions: ['CINTILOGRAFIA OSSEA', 'CINTILOGRAFIA DE PERFUSAO MIOCARDICA'] },
  { code: 'PT', weight: 2, manufacturer: 'GE MEDICAL SYSTEMS', descriptions: ['PET-CT ONCOLOGICO'] },
  { code: 'XA', weight: 2, manufacturer: 'Philips', descriptions: ['CATETERISMO CARDIACO'] },
];

export const CITIES = [
  'São Paulo', 'Rio de Janeiro', 'Belo Horizonte', 'Salvador', 'Fortaleza', 'Recife', 'Curitiba',
  'Porto Alegre', 'Manaus', 'Belém', 'Goiânia', 'Campinas', 'São Luís', 'Maceió', 'Natal',
  'Teresina', 'João Pessoa', 'Florianópolis', 'Vitória', 'Cuiabá', 'Campo Grande', 'Londrina',
  'Ribeirão Preto', 'Sorocaba', 'Uberlândia', 'Joinville', 'Santos', 'Niterói', 'Aracaju', 'Juiz de Fora',
];

export const CLINIC_PREFIXES = [
  'Clínica de Imagem', 'Centro de Diagnóstico', 'Instituto de Radiologia', 'Diagnósticos',
  'Radiologia', 'Clínica Médica', 'Centro Médico', 'Hospital',
];

export const NEIGHBOURHOODS = [
  'Centro', 'Zona Sul', 'Zona Norte', 'Zona Leste', 'Zona Oeste', 'Jardins', 'Boa Vista', 'Aldeota',
  'Pinheiros', 'Moema', 'Tijuca', 'Barra', 'Savassi', 'Pituba', 'Batel', 'Moinhos', 'Meireles',
  'Boa Viagem', 'Copacabana', 'Botafogo', 'Vila Mariana', 'Santana', 'Lapa', 'Ipiranga', 'Tatuapé',
];

/** Expands a weighted list into a flat array (each word repeated by its weight), for SQL picks. */
export function expand(list: Weighted): string[] {
  return list.flatMap(([word, weight]) => Array.from({ length: weight }, () => word));
}
