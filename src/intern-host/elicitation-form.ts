import type { CreateElicitationResponse, ElicitationContentValue, ElicitationSchema } from "@agentclientprotocol/sdk/unstable";
import { catalogueError } from "../core/error-catalogue.js";
import { RE2JS } from "re2js";

/** One field of an elicitation as the caller sees it. */
export interface ElicitationField {
  name: string;
  /** The JSON schema type: string, number, integer, boolean or array (multi-select). */
  type: string;
  required: boolean;
  /** Allowed values of a single- or multi-select field; empty when free. */
  options: string[];
  title?: string;
  description?: string;
}

/** The `arguments` object of an elicitation interaction, as the spec shows it. */
export interface ElicitationArguments {
  kind: "elicitation";
  message: string;
  fields: ElicitationField[];
}

type PropertySchema = Record<string, unknown>;

/**
 * Describes a form elicitation for the caller: one descriptor per property of
 * the requested schema, its options taken from `enum`/`oneOf` (single
 * select) or `items.enum`/`items.anyOf` (multi-select).
 */
export function describeElicitation(message: string, schema: ElicitationSchema): ElicitationArguments {
  const required = new Set(schema.required ?? []);
  const fields = Object.entries(schema.properties ?? {}).map(([name, property]): ElicitationField => {
    const field: ElicitationField = { name, type: property.type, required: required.has(name), options: optionsOf(property) };
    if (typeof property.title === "string") field.title = property.title;
    if (typeof property.description === "string") field.description = property.description;
    return field;
  });
  return { kind: "elicitation", message, fields };
}

/**
 * Parses and validates the caller's answer, a JSON object
 * `{action: accept|decline|cancel, content?}` held in a string, against the
 * requested schema: required fields, no unknown fields, types, bounds and
 * options. Anything else is `bad_request`, so the question stays pending.
 */
export function parseElicitationAnswer(answer: string, schema: ElicitationSchema): CreateElicitationResponse {
  let parsed: unknown;
  try {
    parsed = JSON.parse(answer);
  } catch {
    throw badAnswer('The answer must be a JSON object {"action": "accept" | "decline" | "cancel", "content"?: {...}}.');
  }
  if (!isRecord(parsed)) throw badAnswer("The answer must be a JSON object.");
  const { action, content } = parsed;
  if (action === "decline" || action === "cancel") {
    if (content !== undefined && content !== null) throw badAnswer(`An answer with action "${action}" carries no content.`);
    return { action };
  }
  if (action !== "accept") throw badAnswer('The answer\'s "action" must be "accept", "decline" or "cancel".');
  const values = content ?? {};
  if (!isRecord(values)) throw badAnswer('The answer\'s "content" must be an object of field values.');
  return { action: "accept", content: validateContent(values, schema) };
}

function validateContent(values: Record<string, unknown>, schema: ElicitationSchema): Record<string, ElicitationContentValue> {
  const properties: Record<string, PropertySchema> = schema.properties ?? {};
  for (const name of schema.required ?? []) {
    if (values[name] === undefined || values[name] === null) throw badAnswer(`The field "${name}" is required.`);
  }
  const content: Record<string, ElicitationContentValue> = {};
  for (const [name, value] of Object.entries(values)) {
    const property = properties[name];
    if (!property) throw badAnswer(`The question has no field "${name}".`);
    if (value === null) continue;
    content[name] = validateValue(name, value, property);
  }
  return content;
}

function validateValue(name: string, value: unknown, property: PropertySchema): ElicitationContentValue {
  switch (property.type) {
    case "string":
      return validateString(name, value, property);
    case "number":
    case "integer":
      return validateNumber(name, value, property);
    case "boolean":
      if (typeof value !== "boolean") throw badAnswer(`The field "${name}" must be a boolean.`);
      return value;
    case "array":
      return validateSelection(name, value, property);
    default:
      throw badAnswer(`The field "${name}" has a type (${String(property.type)}) this host cannot fill.`);
  }
}

function validateString(name: string, value: unknown, property: PropertySchema): string {
  if (typeof value !== "string") throw badAnswer(`The field "${name}" must be a string.`);
  const options = optionsOf(property);
  if (options.length > 0 && !options.includes(value)) throw badAnswer(`The field "${name}" must be one of: ${options.join(", ")}.`);
  const length = [...value].length;
  if (typeof property.minLength === "number" && length < property.minLength) throw badAnswer(`The field "${name}" must have at least ${property.minLength} characters.`);
  if (typeof property.maxLength === "number" && length > property.maxLength) throw badAnswer(`The field "${name}" must have at most ${property.maxLength} characters.`);
  if (typeof property.pattern === "string" && !matchesPattern(value, property.pattern)) throw badAnswer(`The field "${name}" must match the pattern ${property.pattern}.`);
  return value;
}

function validateNumber(name: string, value: unknown, property: PropertySchema): number {
  if (typeof value !== "number" || !Number.isFinite(value)) throw badAnswer(`The field "${name}" must be a number.`);
  if (property.type === "integer" && !Number.isInteger(value)) throw badAnswer(`The field "${name}" must be an integer.`);
  if (typeof property.minimum === "number" && value < property.minimum) throw badAnswer(`The field "${name}" must be at least ${property.minimum}.`);
  if (typeof property.maximum === "number" && value > property.maximum) throw badAnswer(`The field "${name}" must be at most ${property.maximum}.`);
  return value;
}

function validateSelection(name: string, value: unknown, property: PropertySchema): string[] {
  if (!Array.isArray(value) || !value.every((item) => typeof item === "string")) throw badAnswer(`The field "${name}" must be an array of strings.`);
  const options = optionsOf(property);
  const unknown = value.find((item) => options.length > 0 && !options.includes(item));
  if (unknown !== undefined) throw badAnswer(`The field "${name}" accepts only: ${options.join(", ")}.`);
  if (typeof property.minItems === "number" && value.length < property.minItems) throw badAnswer(`The field "${name}" needs at least ${property.minItems} choices.`);
  if (typeof property.maxItems === "number" && value.length > property.maxItems) throw badAnswer(`The field "${name}" takes at most ${property.maxItems} choices.`);
  return value;
}

function optionsOf(property: PropertySchema): string[] {
  if (property.type === "array") return isRecord(property.items) ? choicesOf(property.items.enum, property.items.anyOf) : [];
  return choicesOf(property.enum, property.oneOf);
}

function choicesOf(plain: unknown, titled: unknown): string[] {
  if (Array.isArray(plain)) return plain.filter((value): value is string => typeof value === "string");
  if (Array.isArray(titled)) return titled.flatMap((option) => (isRecord(option) && typeof option.const === "string" ? [option.const] : []));
  return [];
}

/**
 * Matches with RE2's linear-time engine: with V8's backtracking one, a
 * pattern such as `^(\w+\s?)+$` and a 30-character answer froze the host's
 * only thread for minutes. A pattern RE2 cannot take (lookaround,
 * backreferences) or a malformed one is not checked here, the agent checks
 * its own answer: an agent's pattern must not turn a caller's answer into a 500.
 */
function matchesPattern(value: string, pattern: string): boolean {
  let compiled: RE2JS;
  try {
    compiled = RE2JS.compile(pattern);
  } catch {
    return true;
  }
  return compiled.matcher(value).find();
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function badAnswer(message: string) {
  return catalogueError("bad_request", message);
}
