/**
 * @module store/session-tree
 * The SQL common to every query over a session and its descendants (subagents at any depth), on both engines.
 */

/**
 * `WITH RECURSIVE tree(id) AS (…)`: the session bound to its one `?` and every session below it (by
 * `sessions.parent_session_id`). Put it first in a statement and read `tree` (`… WHERE session_id IN (SELECT id FROM tree)`).
 */
export const SESSION_TREE_CTE = "WITH RECURSIVE tree(id) AS (SELECT ? UNION SELECT s.id FROM sessions s JOIN tree t ON s.parent_session_id = t.id)";
