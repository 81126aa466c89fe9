import { own } from '../../../shared/own'

/** The API's error bodies, as the scripted model answers them (HTTP errors and SSE `error` events alike). */

/** Anthropic error `type` for an HTTP status, as the real API names them. */
export function errorTypeFor(status: number): string {
  switch (status) {
    case 400:
      return 'invalid_request_error'
    case 401:
      return 'authentication_error'
    case 402:
      return 'billing_error'
    case 403:
      return 'permission_error'
    case 404:
      return 'not_found_error'
    case 413:
      return 'request_too_large'
    case 429:
      return 'rate_limit_error'
    case 504:
      return 'timeout_error'
    case 529:
      return 'overloaded_error'
    default:
      return 'api_error'
  }
}

const DEFAULT_ERROR_MESSAGES: Record<string, string> = {
  invalid_request_error: 'Invalid request.',
  authentication_error: 'invalid x-api-key',
  billing_error: 'Your credit balance is too low to access the Anthropic API.',
  permission_error: 'Your API key does not have permission to use the specified resource.',
  not_found_error: 'Not found.',
  request_too_large: 'Request exceeds the maximum allowed number of bytes.',
  rate_limit_error: 'Number of request tokens has exceeded your per-minute rate limit.',
  timeout_error: 'Request timed out.',
  overloaded_error: 'Overloaded',
  api_error: 'Internal server error',
}

export function errorBody(type: string, message?: string, errorCode?: string): string {
  return JSON.stringify({
    type: 'error',
    error: {
      type,
      message: message ?? own(DEFAULT_ERROR_MESSAGES, type) ?? type,
      ...(errorCode ? { details: { error_code: errorCode } } : {}),
    },
  })
}
