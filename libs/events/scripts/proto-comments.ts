import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fromBinary } from '@bufbuild/protobuf';
import { FileDescriptorSetSchema, type DescriptorProto } from '@bufbuild/protobuf/wkt';
import type { Describe } from '../src/json-schema';

const repo = path.resolve(__dirname, '../../..');
// Field numbers in descriptor.proto: FileDescriptorProto.message_type, DescriptorProto.field / nested_type.
const messageType = 4;
const fieldOf = 2;
const nestedType = 3;

/**
 * The comments written above the messages and fields of the event protos, read from the descriptor set
 * buf builds with source info (the descriptors embedded in the generated code carry none).
 */
export function protoComments(): Describe {
  const image = execFileSync(
    path.join(repo, 'node_modules/.bin/buf'),
    ['build', 'proto', '--path', 'proto/costgov/events', '--as-file-descriptor-set', '-o', '-'],
    { cwd: repo, maxBuffer: 64 * 1024 * 1024 },
  );
  const comments = new Map<string, string>();
  for (const file of fromBinary(FileDescriptorSetSchema, image).file) {
    const byPath = new Map(
      (file.sourceCodeInfo?.location ?? [])
        .filter((location) => location.leadingComments)
        .map((location) => [location.path.join('.'), tidy(location.leadingComments!)]),
    );
    const visit = (messages: DescriptorProto[], scope: string, at: number[]) =>
      messages.forEach((message, i) => {
        const typeName = `${scope}.${message.name}`;
        const where = [...at, i];
        const own = byPath.get(where.join('.'));
        if (own) comments.set(typeName, own);
        message.field.forEach((field, j) => {
          const comment = byPath.get([...where, fieldOf, j].join('.'));
          if (comment) comments.set(`${typeName}.${field.name}`, comment);
        });
        visit(message.nestedType, typeName, [...where, nestedType]);
      });
    visit(file.messageType, file.package, [messageType]);
  }
  return (typeName, field) => comments.get(field === undefined ? typeName : `${typeName}.${field}`);
}

const tidy = (comment: string): string =>
  comment
    .split('\n')
    .map((line) => line.trim())
    .join('\n')
    .trim();
