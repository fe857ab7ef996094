/**
 * The skills of Skep's built-in catalog: Agent Skills published in Anthropic's public
 * `anthropics/skills` repository, installable from git. Descriptions are our own.
 */
import type { CatalogSkill } from '../../schemas/registry/index.js';

const REPO = 'https://github.com/anthropics/skills';

function skill(
  name: string,
  title: string,
  description: string,
  license: string,
  tags: string[],
): CatalogSkill {
  return {
    namespace: 'io.github.anthropics',
    name,
    title,
    description,
    version: '1.0.0',
    status: 'active',
    license,
    repository: { url: REPO, type: 'git' },
    packages: [{ registryType: 'git', url: REPO, ref: 'main', subfolder: `skills/${name}` }],
    metadata: { tags },
  };
}

// The document skills are source-available under Anthropic's own terms; the others are Apache-2.0.
export const BUILTIN_SKILLS: readonly CatalogSkill[] = [
  skill(
    'pdf',
    'PDF',
    'Read, fill in, merge, split and create PDF files, including text and table extraction.',
    'Proprietary',
    ['documents', 'pdf'],
  ),
  skill(
    'docx',
    'Word documents',
    'Create and edit Word documents with tracked changes, comments and formatting kept intact.',
    'Proprietary',
    ['documents', 'office'],
  ),
  skill(
    'xlsx',
    'Spreadsheets',
    'Build and analyse Excel workbooks: formulas, formatting, charts and data cleaning.',
    'Proprietary',
    ['documents', 'office', 'data'],
  ),
  skill(
    'pptx',
    'Presentations',
    'Create and edit PowerPoint decks from layouts, templates and speaker notes.',
    'Proprietary',
    ['documents', 'office'],
  ),
  skill(
    'mcp-builder',
    'MCP server builder',
    'A guided method for designing and writing good MCP servers in TypeScript or Python.',
    'Apache-2.0',
    ['mcp', 'development'],
  ),
  skill(
    'skill-creator',
    'Skill creator',
    'Helps write a new skill: structure, SKILL.md front matter, scripts and evaluation.',
    'Apache-2.0',
    ['skills', 'authoring'],
  ),
  skill(
    'webapp-testing',
    'Web app testing',
    'Tests local web applications with Playwright scripts, screenshots and browser logs.',
    'Apache-2.0',
    ['testing', 'browser'],
  ),
  skill(
    'frontend-design',
    'Frontend design',
    'Guides the model to distinctive, production-grade web interfaces instead of generic ones.',
    'Apache-2.0',
    ['design', 'frontend'],
  ),
];
