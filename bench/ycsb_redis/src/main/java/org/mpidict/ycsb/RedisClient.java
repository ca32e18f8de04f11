// A site.ycsb.DB binding for Redis on Jedis: the reference point of
// docs/ycsb.md (YCSB's own Redis binding is not on Maven Central).
//
// A record is a Redis hash (key -> field -> value), as in YCSB's Redis
// binding.  Scans need key order, which Redis keeps only in sorted sets: every
// key is also a member of the sorted set "_keys" with score 0, so
// ZRANGEBYLEX gives the keys from the start key in byte order, exactly what
// YCSB's scan asks for; their records are then read in one pipeline.
// Properties: redis.host (default localhost), redis.port (6379).
package org.mpidict.ycsb;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.Vector;

import redis.clients.jedis.Jedis;
import redis.clients.jedis.Pipeline;
import redis.clients.jedis.Response;
import site.ycsb.ByteIterator;
import site.ycsb.DB;
import site.ycsb.DBException;
import site.ycsb.Status;
import site.ycsb.StringByteIterator;

public class RedisClient extends DB {
  private static final String INDEX = "_keys";
  private Jedis jedis;

  @Override
  public void init() throws DBException {
    String host = getProperties().getProperty("redis.host", "localhost");
    int port = Integer.parseInt(getProperties().getProperty("redis.port", "6379"));
    jedis = new Jedis(host, port, 60000);
    try {
      jedis.connect();
      String password = getProperties().getProperty("redis.password", "");
      if (!password.isEmpty()) {
        jedis.auth(password);
      }
    } catch (RuntimeException e) {
      throw new DBException("cannot connect to Redis at " + host + ":" + port + ": " + e.getMessage());
    }
  }

  @Override
  public void cleanup() throws DBException {
    jedis.close();
  }

  private static Map<String, String> strings(Map<String, ByteIterator> values) {
    Map<String, String> out = new HashMap<>();
    for (Map.Entry<String, ByteIterator> entry : values.entrySet()) {
      out.put(entry.getKey(), entry.getValue().toString());
    }
    return out;
  }

  private static void fill(Map<String, String> from, Set<String> fields, Map<String, ByteIterator> result) {
    for (Map.Entry<String, String> entry : from.entrySet()) {
      if (fields == null || fields.contains(entry.getKey())) {
        result.put(entry.getKey(), new StringByteIterator(entry.getValue()));
      }
    }
  }

  @Override
  public Status read(String table, String key, Set<String> fields, Map<String, ByteIterator> result) {
    Map<String, String> record = jedis.hgetAll(key);
    if (record.isEmpty()) {
      return Status.NOT_FOUND;
    }
    fill(record, fields, result);
    return Status.OK;
  }

  @Override
  public Status insert(String table, String key, Map<String, ByteIterator> values) {
    Pipeline pipeline = jedis.pipelined();
    pipeline.hmset(key, strings(values));
    pipeline.zadd(INDEX, 0, key);
    pipeline.sync();
    return Status.OK;
  }

  @Override
  public Status update(String table, String key, Map<String, ByteIterator> values) {
    return "OK".equals(jedis.hmset(key, strings(values))) ? Status.OK : Status.ERROR;
  }

  @Override
  public Status delete(String table, String key) {
    Pipeline pipeline = jedis.pipelined();
    Response<Long> removed = pipeline.del(key);
    pipeline.zrem(INDEX, key);
    pipeline.sync();
    return removed.get() == 0 ? Status.NOT_FOUND : Status.OK;
  }

  @Override
  public Status scan(String table, String startkey, int recordcount, Set<String> fields,
                     Vector<HashMap<String, ByteIterator>> result) {
    Set<String> keys = jedis.zrangeByLex(INDEX, "[" + startkey, "+", 0, recordcount);
    Pipeline pipeline = jedis.pipelined();
    List<Response<Map<String, String>>> records = new java.util.ArrayList<>();
    for (String key : keys) {
      records.add(pipeline.hgetAll(key));
    }
    pipeline.sync();
    for (Response<Map<String, String>> record : records) {
      HashMap<String, ByteIterator> values = new HashMap<>();
      fill(record.get(), fields, values);
      result.add(values);
    }
    return Status.OK;
  }
}
