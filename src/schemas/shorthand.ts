/**
 * Short names for the TypeBox types the wire-format schemas (run configuration, registry
 * model, vMCP config, embedded authorization server) are written with, one field a line.
 */
import { Type } from 'typebox';

export const Opt = Type.Optional;
export const Str = () => Type.String();
export const Strs = () => Type.Array(Type.String());
export const StrMap = () => Type.Record(Type.String(), Type.String());
export const Bool = () => Type.Boolean();
