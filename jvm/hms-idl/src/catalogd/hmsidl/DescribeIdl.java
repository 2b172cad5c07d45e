package catalogd.hmsidl;

import java.io.PrintStream;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import org.apache.thrift.TBase;
import org.apache.thrift.TEnum;
import org.apache.thrift.TException;
import org.apache.thrift.TFieldIdEnum;
import org.apache.thrift.TFieldRequirementType;
import org.apache.thrift.TUnion;
import org.apache.thrift.meta_data.EnumMetaData;
import org.apache.thrift.meta_data.FieldMetaData;
import org.apache.thrift.meta_data.FieldValueMetaData;
import org.apache.thrift.meta_data.ListMetaData;
import org.apache.thrift.meta_data.MapMetaData;
import org.apache.thrift.meta_data.SetMetaData;
import org.apache.thrift.meta_data.StructMetaData;
import org.apache.thrift.protocol.TType;

/**
 * Prints, as JSON, the Thrift IDL that a Hive metastore jar was generated from: every struct,
 * union, exception and enum of its {@code api} package and every method of its
 * {@code ThriftHiveMetastore} service, read back from the generated classes' field metadata
 * (field ids, names, requirements, types and defaults). catalogd's Python side builds its HMS
 * 3/4 classes from this (catalogd/hive_idl), so the metastore's own released jar on Maven Central
 * is the one source of the newer IDL.
 *
 * <p>Usage: {@code java -cp <this>:<hive-standalone-metastore-common.jar>:<libthrift...>
 * catalogd.hmsidl.DescribeIdl <jar> > idl.json}
 */
public final class DescribeIdl {
  private static final String API = "org/apache/hadoop/hive/metastore/api/";
  private static final String SERVICE = "org.apache.hadoop.hive.metastore.api.ThriftHiveMetastore";

  private DescribeIdl() {}

  public static void main(String[] args) throws Exception {
    Map<String, String> structs = new TreeMap<>();
    Map<String, String> enums = new TreeMap<>();
    Map<String, String> methods = new TreeMap<>();
    ClassLoader loader = DescribeIdl.class.getClassLoader();
    try (JarFile jar = new JarFile(args[0])) {
      Enumeration<JarEntry> entries = jar.entries();
      while (entries.hasMoreElements()) {
        String name = entries.nextElement().getName();
        if (!name.startsWith(API) || !name.endsWith(".class")) {
          continue;
        }
        String className = name.substring(0, name.length() - 6).replace('/', '.');
        String rest = className.substring(API.length());
        if (rest.contains("$") && !className.startsWith(SERVICE + "$")) {
          continue;
        }
        Class<?> cls = Class.forName(className, true, loader);
        if (className.startsWith(SERVICE + "$")) {
          String simple = cls.getSimpleName();
          if (TBase.class.isAssignableFrom(cls) && (simple.endsWith("_args") || simple.endsWith("_result"))) {
            methods.put(simple, fields(cls));
          }
        } else if (cls.isEnum() && TEnum.class.isAssignableFrom(cls)) {
          enums.put(cls.getSimpleName(), enumValues(cls));
        } else if (TBase.class.isAssignableFrom(cls) && !Modifier.isAbstract(cls.getModifiers())) {
          String kind = TUnion.class.isAssignableFrom(cls) ? "union"
              : TException.class.isAssignableFrom(cls) ? "exception" : "struct";
          structs.put(cls.getSimpleName(), "{\"kind\":\"" + kind + "\",\"fields\":" + fields(cls) + "}");
        }
      }
    }
    PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
    out.print("{\"source\":" + quote(new java.io.File(args[0]).getName()));
    out.print(",\n\"enums\":" + object(enums));
    out.print(",\n\"structs\":" + object(structs));
    out.print(",\n\"service\":" + object(methods));
    out.println("}");
    out.flush();
  }

  private static String object(Map<String, String> members) {
    StringBuilder b = new StringBuilder("{");
    for (Map.Entry<String, String> e : members.entrySet()) {
      if (b.length() > 1) {
        b.append(",\n");
      }
      b.append(quote(e.getKey())).append(':').append(e.getValue());
    }
    return b.append('}').toString();
  }

  private static String enumValues(Class<?> cls) {
    Map<String, String> values = new TreeMap<>();
    for (Object constant : cls.getEnumConstants()) {
      values.put(((Enum<?>) constant).name(), Integer.toString(((TEnum) constant).getValue()));
    }
    return object(values);
  }

  @SuppressWarnings({"unchecked", "rawtypes"})
  private static String fields(Class<?> cls) throws Exception {
    Field meta = cls.getField("metaDataMap");
    Map<TFieldIdEnum, FieldMetaData> map = (Map<TFieldIdEnum, FieldMetaData>) meta.get(null);
    // A fresh instance holds the IDL's default values (set by its no-argument constructor).
    TBase fresh = (TBase) cls.getConstructor().newInstance();
    List<String> out = new ArrayList<>();
    for (Map.Entry<TFieldIdEnum, FieldMetaData> e : map.entrySet()) {
      FieldMetaData f = e.getValue();
      String requirement = switch (f.requirementType) {
        case TFieldRequirementType.REQUIRED -> "required";
        case TFieldRequirementType.OPTIONAL -> "optional";
        default -> "default";
      };
      String defaultValue = "null";
      if (!(fresh instanceof TUnion) && fresh.isSet(e.getKey())) {
        Object value = fresh.getFieldValue(e.getKey());
        if (value instanceof Number || value instanceof Boolean) {
          defaultValue = value.toString();
        } else if (value instanceof String s) {
          defaultValue = quote(s);
        } else if (value instanceof TEnum t) {
          defaultValue = Integer.toString(t.getValue());
        }
      }
      out.add("{\"id\":" + e.getKey().getThriftFieldId() + ",\"name\":" + quote(f.fieldName)
          + ",\"req\":\"" + requirement + "\",\"type\":" + type(f.valueMetaData) + ",\"default\":" + defaultValue + "}");
    }
    return "[" + String.join(",", out) + "]";
  }

  private static String type(FieldValueMetaData v) {
    if (v instanceof StructMetaData s) {
      return "{\"t\":12,\"struct\":" + quote(s.structClass.getSimpleName()) + "}";
    }
    if (v instanceof ListMetaData l) {
      return "{\"t\":15,\"elem\":" + type(l.elemMetaData) + "}";
    }
    if (v instanceof SetMetaData s) {
      return "{\"t\":14,\"elem\":" + type(s.elemMetaData) + "}";
    }
    if (v instanceof MapMetaData m) {
      return "{\"t\":13,\"key\":" + type(m.keyMetaData) + ",\"value\":" + type(m.valueMetaData) + "}";
    }
    if (v instanceof EnumMetaData en) {
      return "{\"t\":8,\"enum\":" + quote(en.enumClass.getSimpleName()) + "}";
    }
    if (v.type == TType.STRUCT) {
      // A struct that refers to itself (or a typedef'd struct): metadata by name only.
      return "{\"t\":12,\"struct\":" + quote(v.getTypedefName()) + "}";
    }
    if (v.type == TType.ENUM) {
      return "{\"t\":8}";
    }
    return "{\"t\":" + v.type + (v.isBinary() ? ",\"binary\":true" : "") + "}";
  }

  private static String quote(String s) {
    StringBuilder b = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      switch (c) {
        case '"' -> b.append("\\\"");
        case '\\' -> b.append("\\\\");
        case '\n' -> b.append("\\n");
        default -> {
          if (c < 0x20) {
            b.append(String.format("\\u%04x", (int) c));
          } else {
            b.append(c);
          }
        }
      }
    }
    return b.append('"').toString();
  }
}
