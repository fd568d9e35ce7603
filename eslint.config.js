// @ts-check
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';
import globals from 'globals';

export default defineConfig(
  { ignores: ['node_modules/', 'dist/', 'coverage/', 'data/'] },
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node } },
    rules: {
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_' },
      ],
      eqeqeq: ['error', 'always'],
      // One private-member style: ECMAScript `#x`, private at run time as well.
      'no-restricted-syntax': [
        'error',
        {
          selector:
            ':matches(PropertyDefinition, TSParameterProperty, TSAbstractPropertyDefinition)[accessibility="private"], MethodDefinition[accessibility="private"][kind!="constructor"]',
          message: 'use an ECMAScript private member (#name), not TypeScript `private`',
        },
      ],
    },
  },
  {
    // Security: the daemon logs only through the injected, scrubbing logger.
    files: ['broker/**/*.ts'],
    rules: { 'no-console': 'error' },
  },
);
