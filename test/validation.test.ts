import { describe, expect, it } from 'vitest'
import { compileValidator, readDecimalText, validatorCompiler } from '../src/shared/validation.js'

const compile = (schema: object) => validatorCompiler({ schema, httpPart: 'body', method: 'POST', url: '/test' })

describe('Ajv strict mode', () => {
  it('refuses a misspelt keyword when the route is built, instead of skipping the rule', () => {
    expect(() => compile({ type: 'object', properties: { name: { type: 'string', maxLenght: 10 } } })).toThrow('strict mode: unknown keyword: "maxLenght"')
  })

  it('refuses a rule on a value whose type the schema does not say', () => {
    expect(() => compile({ type: 'object', properties: { stock: { minimum: 0 } } })).toThrow('missing type "number" for keyword "minimum"')
  })

  it('still accepts the keywords the service declares (errorMessages, example)', () => {
    expect(() => compile({ type: 'object', properties: { name: { type: 'string', example: 'Lamp', errorMessages: { type: 'x' } } } })).not.toThrow()
  })
})

describe('the text rule is applied by the compiler, to every field', () => {
  const validate = compileValidator<unknown>({
    type: 'object',
    properties: {
      tags: { type: 'array', items: { type: 'string' } },
      anything: {},
      nested: { type: 'object', properties: { note: { type: ['string', 'null'] } } },
    },
  })

  it.each([
    [{ tags: ['ok', 'a\u0000'] }, 'tags must not contain control characters'],
    [{ anything: 'x\u001f' }, 'anything must not contain control characters'],
    [{ nested: { note: '\u007f' } }, 'note must not contain control characters'],
  ])('%j is refused', (data, message) => {
    expect(() => validate(data)).toThrow(message)
  })

  it('tab, line feed, carriage return and other text pass; so does what is not a string', () => {
    expect(validate({ tags: ['a\tb', 'c\r\nd', 'ñ €'], anything: 5, nested: { note: null } })).toBeTruthy()
  })
})

describe('numbers written as text (query strings, paths) are read as decimals only', () => {
  it.each([
    ['10', 10],
    ['010', 10],
    ['2.0', 2],
    ['-1', -1],
    ['+5', 5],
    ['19.99', 19.99],
    ['.5', 0.5],
    ['1e3', 1000],
    ['1E-2', 0.01],
  ])('%s is %d', (text, value) => {
    expect(readDecimalText(text)).toBe(value)
  })

  it.each(['Infinity', '-Infinity', 'NaN', '1e400', '-1e400', '0x10', '0b11', '0o7', ' 5', '5 ', '1_000', '', '.', 'e3', '1e', '--1'])(
    '%j is not a number',
    (text) => {
      expect(readDecimalText(text)).toBeNaN()
    },
  )
})
